package sweeper

import (
	"context"
	"fmt"

	"github.com/cks-dev/cks"
)

// OverrideStore is the persistent override table as the controller needs it:
// readable by the runners (Overrides) and writable by start/stop.
type OverrideStore interface {
	Overrides
	SetSweeperDesiredRunning(ctx context.Context, id string, running bool) error
}

// Controller is the operator's control of the sweepers of one process (the
// service behind list_agents, agent_status, start_agent and stop_agent). Stop
// writes the override AND stops the local runner, so every other node stops
// at its next tick (or sooner through a change notification). Start writes the
// override and starts the local runner only: a node whose loop is not running
// has nothing that would read the override until it restarts. That asymmetry
// is ADR-015's, deliberately.
type Controller struct {
	reg   *Registry
	store OverrideStore
}

// NewController returns a Controller of reg's runners that records overrides in s.
func NewController(reg *Registry, s OverrideStore) *Controller {
	return &Controller{reg: reg, store: s}
}

// Registry returns the controlled registry.
func (c *Controller) Registry() *Registry { return c.reg }

// List returns every sweeper's status, in registration order, with its stored
// override read now.
func (c *Controller) List(ctx context.Context) ([]cks.SweeperStatus, error) {
	var out []cks.SweeperStatus
	for _, r := range c.reg.Runners() {
		st, err := c.status(ctx, r)
		if err != nil {
			return nil, err
		}
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
	st := r.Status()
	o, err := c.store.GetSweeperDesiredRunning(ctx, r.ID())
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
	if err := c.store.SetSweeperDesiredRunning(ctx, id, running); err != nil {
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
