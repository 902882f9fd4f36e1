package sweeper

import (
	"context"
	"errors"
	"fmt"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/clock"
	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/leader"
)

// Controller is the sweepers of one process and their persistent
// start/stop overrides of ADR-015 (cks_sweeper_control): the service behind
// list_agents, agent_status, start_agent and stop_agent, and the Overrides
// every runner of its registry reads. Stop writes the override AND stops
// the local runner, so every other node stops at its next tick (or sooner
// through a change notification). Start writes the override and starts the
// local runner; another node's stopped runner has no tick that would read
// the override, so it starts on the change notification (Registry.Follow)
// or at its restart. ADR-015 left cross-node starts out; with one
// maintenance leader running the passes a start that reached one standby
// hub alone would run nothing (issue 26). An override's rules are here
// too: an id is checked by ValidateSweeperID before anything is read or
// written, an override is an upsert dated by the clock that publishes
// cks.TopicSweeperControl in the same transaction, and no row reads as no
// override (nil).
type Controller struct {
	db    driver.Driver
	clock clock.Clock
	reg   *Registry
}

// NewController returns the sweeper control of db, its overrides dated by
// clk (the system clock when nil), over an empty registry the process
// registers its runners in (Registry).
func NewController(db driver.Driver, clk clock.Clock) *Controller {
	if clk == nil {
		clk = clock.System{}
	}
	return &Controller{db: db, clock: clk, reg: NewRegistry()}
}

// Registry returns the controlled registry.
func (c *Controller) Registry() *Registry { return c.reg }

// List returns every sweeper's status, in registration order, with its stored
// override read now.
func (c *Controller) List(ctx context.Context) ([]cks.SweeperStatus, error) {
	leader, err := c.leader(ctx)
	if err != nil {
		return nil, err
	}
	var out []cks.SweeperStatus
	for _, r := range c.reg.Runners() {
		st, err := c.override(ctx, r)
		if err != nil {
			return nil, err
		}
		st.Leader = leader
		out = append(out, st)
	}
	return out, nil
}

// Status returns one sweeper's status; an unknown id is an *UnknownSweeperError
// naming the known ids.
func (c *Controller) Status(ctx context.Context, id string) (cks.SweeperStatus, error) {
	r, err := c.reg.Get(id)
	if err != nil {
		return cks.SweeperStatus{}, err
	}
	return c.status(ctx, r)
}

func (c *Controller) status(ctx context.Context, r *Runner) (cks.SweeperStatus, error) {
	st, err := c.override(ctx, r)
	if err != nil {
		return st, err
	}
	st.Leader, err = c.leader(ctx)
	return st, err
}

// leader returns the id of the maintenance leader, "" when no hub holds it.
func (c *Controller) leader(ctx context.Context) (string, error) {
	l, _, err := leader.Current(ctx, c.db, cks.MaintenanceLeadership, c.clock)
	return l.ID, err
}

// override returns r's status with its stored override read now.
func (c *Controller) override(ctx context.Context, r *Runner) (cks.SweeperStatus, error) {
	st := r.Status()
	o, err := c.GetSweeperDesiredRunning(ctx, r.ID())
	if err != nil {
		return st, fmt.Errorf("read override of %s: %w", r.ID(), err)
	}
	st.DesiredRunning = o
	return st, nil
}

// Start records desired_running = true and starts the local runner. A
// config-disabled sweeper is refused with ErrDisabledByConfig and nothing is
// written.
func (c *Controller) Start(ctx context.Context, id string) (cks.SweeperStatus, error) {
	return c.set(ctx, id, true)
}

// Stop records desired_running = false and stops the local runner, waiting for
// its loop to exit. A config-disabled sweeper is refused with
// ErrDisabledByConfig and nothing is written.
func (c *Controller) Stop(ctx context.Context, id string) (cks.SweeperStatus, error) {
	return c.set(ctx, id, false)
}

func (c *Controller) set(ctx context.Context, id string, running bool) (cks.SweeperStatus, error) {
	r, err := c.reg.Get(id)
	if err != nil {
		return cks.SweeperStatus{}, err
	}
	if !r.ConfigEnabled() {
		name, _ := EnvNames(id)
		return cks.SweeperStatus{}, fmt.Errorf("%w: %s is off (%s); the override table never enables it", ErrDisabledByConfig, id, name)
	}
	if err := c.SetSweeperDesiredRunning(ctx, id, running); err != nil {
		return cks.SweeperStatus{}, fmt.Errorf("record override of %s: %w", id, err)
	}
	if running {
		err = r.Start(ctx)
	} else {
		err = r.Stop(ctx)
	}
	if err != nil {
		return cks.SweeperStatus{}, err
	}
	return c.status(ctx, r)
}

// SetSweeperDesiredRunning records the override for id (an upsert that
// also sets updated_at from the store's clock; it publishes a change on
// TopicSweeperControl in the same transaction). An empty id is a
// FieldError naming agent_id.
func (c *Controller) SetSweeperDesiredRunning(ctx context.Context, id string, running bool) error {
	if err := ValidateSweeperID(id); err != nil {
		return err
	}
	err := c.db.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		if err := ex.SweeperControlUpsert(ctx, id, running, driver.Time(c.clock.Now())); err != nil {
			return err
		}
		return ex.Notify(ctx, cks.TopicSweeperControl)
	})
	if err != nil {
		return fmt.Errorf("set sweeper control %q: %w", id, err)
	}
	return nil
}

// GetSweeperDesiredRunning returns the override, or nil when there is no
// row. An empty id is a FieldError naming agent_id.
func (c *Controller) GetSweeperDesiredRunning(ctx context.Context, id string) (*bool, error) {
	if err := ValidateSweeperID(id); err != nil {
		return nil, err
	}
	running, err := c.db.Executor().SweeperControlGet(ctx, id)
	if errors.Is(err, driver.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get sweeper control %q: %w", id, err)
	}
	return &running, nil
}
