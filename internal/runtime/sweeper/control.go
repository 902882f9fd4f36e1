package sweeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/leader"
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
// too: an id is checked by validateSweeperID before anything is read or
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
	return &Controller{db: db, clock: clk, reg: newRegistry()}
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

// override returns r's status with its stored override and its recent
// passes read now.
func (c *Controller) override(ctx context.Context, r *Runner) (cks.SweeperStatus, error) {
	st := r.Status()
	o, err := c.GetSweeperDesiredRunning(ctx, r.id)
	if err != nil {
		return st, fmt.Errorf("read override of %s: %w", r.id, err)
	}
	st.DesiredRunning = o
	if st.RecentPasses, err = c.RecentPasses(ctx, r.id, RecentPassesCap); err != nil {
		return st, err
	}
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
	if !r.enabled {
		name, _ := config.SweeperEnv(id)
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
	if err := validateSweeperID(id); err != nil {
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
	if err := validateSweeperID(id); err != nil {
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

// PassesKept is how many of a sweeper's newest passes cks_sweeper_passes
// keeps whatever their age: RecordPass trims the older ones, so the table
// stays bounded (about PassesKept rows a sweeper) even with retention off,
// while the retention sweeper prunes the passes older than CKS_RETENTION.
// At the default intervals 1000 passes are 8 hours of lease_reaper's (30 s)
// and a week of the 10-minute sweepers'.
const PassesKept = 1000

// trimBatch bounds what one RecordPass trims: one row beyond the cap in
// the steady state, more once after PassesKept was lowered.
const trimBatch = 100

// RecordPass records a completed pass of sweeper id (its PassRecorder):
// the row and the trim of the sweeper's passes beyond PassesKept, in one
// transaction. An invalid id is a FieldError naming agent_id.
func (c *Controller) RecordPass(ctx context.Context, id string, p cks.SweeperPass) error {
	if err := validateSweeperID(id); err != nil {
		return err
	}
	row := driver.SweeperPassRow{AgentID: id, HubID: p.Hub, StartedAt: driver.Time(p.At), DurationMS: p.DurationMS,
		ResultCount: p.Count, Error: p.Error}
	if p.Details != nil {
		b, err := json.Marshal(p.Details)
		if err != nil {
			return fmt.Errorf("record pass of sweeper %q: details: %w", id, err)
		}
		row.Details = string(b)
	}
	err := c.db.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		if err := ex.SweeperPassInsert(ctx, row); err != nil {
			return err
		}
		_, err := ex.SweeperPassTrim(ctx, driver.SweeperPassTrimParams{AgentID: id, Keep: PassesKept, Limit: trimBatch})
		return err
	})
	if err != nil {
		return fmt.Errorf("record pass of sweeper %q: %w", id, err)
	}
	return nil
}

// RecentPasses returns the newest limit passes of sweeper id, newest first,
// whichever hub ran them.
func (c *Controller) RecentPasses(ctx context.Context, id string, limit int) ([]cks.SweeperPass, error) {
	if err := validateSweeperID(id); err != nil {
		return nil, err
	}
	rows, err := c.db.Executor().SweeperPassRecent(ctx, driver.SweeperPassRecentParams{AgentID: id, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("read passes of sweeper %q: %w", id, err)
	}
	out := make([]cks.SweeperPass, len(rows))
	for i, r := range rows {
		out[i] = cks.SweeperPass{At: r.StartedAt, DurationMS: r.DurationMS, Count: r.ResultCount, Error: r.Error, Hub: r.HubID}
		if r.Details != "" {
			out[i].Details = json.RawMessage(r.Details)
		}
	}
	return out, nil
}

// PrunePasses deletes the passes that started before before, up to
// maxRows in batches of PruneBatch, and returns how many: the retention
// sweeper's share of the passes (its PassPruner).
func (c *Controller) PrunePasses(ctx context.Context, before time.Time, maxRows int) (int, error) {
	total := 0
	for total < maxRows {
		n, err := c.db.Executor().SweeperPassPrune(ctx, driver.SweeperPassPruneParams{Before: driver.Time(before),
			Limit: min(PruneBatch, maxRows-total)})
		total += n
		if err != nil {
			return total, fmt.Errorf("prune sweeper passes: %w", err)
		}
		if n < PruneBatch {
			break
		}
	}
	return total, nil
}

// PruneBatch is how many passes one statement of PrunePasses deletes (no
// long transaction).
const PruneBatch = 1000
