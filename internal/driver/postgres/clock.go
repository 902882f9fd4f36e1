package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/cks-dev/cks/internal/driver"
)

// DatabaseNow reads the server's clock (clock_timestamp()): the clock the
// leases of leadership are judged by, and the one every process corrects
// its host's clock to (backend.Open measures the offset with it), which
// `cks doctor` compares with the host's.
func (d *Driver) DatabaseNow(ctx context.Context) (time.Time, error) {
	t, err := d.q.DatabaseNow(ctx, d.pool)
	if err != nil {
		return time.Time{}, fmt.Errorf("postgres: %s: read the clock: %w", d.where, mapErr("clock", err))
	}
	return driver.Time(t), nil
}
