package sweeper

import (
	"context"
	"errors"
	"fmt"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/clock"
	"github.com/cks-dev/cks/driver"
)

// ControlRows is ControlRows over a driver: the persistent
// start/stop overrides of ADR-015 (cks_sweeper_control), with their rules
// here — an id is checked by sweeper.ValidateSweeperID before anything is
// read or written, an override is an upsert dated by the clock that
// publishes cks.TopicSweeperControl in the same transaction, and no row
// reads as no override (nil).
type ControlRows struct {
	db    driver.Driver
	clock clock.Clock
}

// NewControlRows returns the sweeper overrides of db, dated by clk (the
// system clock when nil).
func NewControlRows(db driver.Driver, clk clock.Clock) *ControlRows {
	if clk == nil {
		clk = clock.System{}
	}
	return &ControlRows{db: db, clock: clk}
}

// SetSweeperDesiredRunning records the override for id (an upsert that
// also sets updated_at from the store's clock; it publishes a change on
// TopicSweeperControl in the same transaction). An empty id is a
// FieldError naming agent_id.
func (c *ControlRows) SetSweeperDesiredRunning(ctx context.Context, id string, running bool) error {
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
func (c *ControlRows) GetSweeperDesiredRunning(ctx context.Context, id string) (*bool, error) {
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
