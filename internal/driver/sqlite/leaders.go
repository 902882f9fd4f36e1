package sqlite

import (
	"context"
	"time"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/sqlite/internal/dbsqlc"
)

// The leader primitives are written here because their times come from the
// caller's clock (p.Now) where Postgres takes its own: the adapter pairs
// fields, not clocks.

// LeaderElect implements driver.Executor.
func (e *executor) LeaderElect(ctx context.Context, p driver.LeaderElectParams) (driver.LeaderRow, error) {
	var row driver.LeaderRow
	err := e.write(ctx, "leader elect", func(w *wtx) error {
		x, err := e.d.q.LeaderElect(ctx, w, dbsqlc.LeaderElectParams{
			Name: p.Name, LeaderID: p.LeaderID, Now: fmtTime(p.Now), ExpiresAt: fmtTime(p.Now.Add(p.TTL)),
		})
		if err != nil {
			return mapErr("leader elect "+p.Name, err)
		}
		row, err = leaderRow(x)
		return err
	})
	return row, err
}

// LeaderGet implements driver.Executor.
func (e *executor) LeaderGet(ctx context.Context, name string, now time.Time) (driver.LeaderRow, error) {
	x, err := e.d.q.LeaderGet(ctx, e.read, dbsqlc.LeaderGetParams{Name: name, Now: fmtTime(now)})
	if err != nil {
		return driver.LeaderRow{}, mapErr("leader get "+name, err)
	}
	return leaderRow(x)
}

func leaderRow(x dbsqlc.CksLeader) (driver.LeaderRow, error) {
	r := driver.LeaderRow{Name: x.Name, LeaderID: x.LeaderID}
	var err error
	if r.ElectedAt, err = parseTime(x.ElectedAt); err != nil {
		return r, err
	}
	r.ExpiresAt, err = parseTime(x.ExpiresAt)
	return r, err
}
