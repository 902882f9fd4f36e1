package postgres

import (
	"context"
	"time"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/postgres/internal/dbsqlc"
)

// The leader primitives are written here because they take the database's
// clock (now()) and ignore the caller's: hubs on several hosts judge every
// leadership by one clock.

// LeaderElect implements driver.Executor.
func (e *executor) LeaderElect(ctx context.Context, p driver.LeaderElectParams) (driver.LeaderRow, error) {
	x, err := e.d.q.LeaderElect(ctx, e.db, dbsqlc.LeaderElectParams{Name: p.Name, LeaderID: p.LeaderID, TtlUs: p.TTL.Microseconds()})
	if err != nil {
		return driver.LeaderRow{}, mapErr("leader elect "+p.Name, err)
	}
	return leaderRow(x), nil
}

// LeaderGet implements driver.Executor; now is not used (the database's clock is).
func (e *executor) LeaderGet(ctx context.Context, name string, _ time.Time) (driver.LeaderRow, error) {
	x, err := e.d.q.LeaderGet(ctx, e.db, name)
	if err != nil {
		return driver.LeaderRow{}, mapErr("leader get "+name, err)
	}
	return leaderRow(x), nil
}

func leaderRow(x dbsqlc.CksLeader) driver.LeaderRow {
	return driver.LeaderRow{Name: x.Name, LeaderID: x.LeaderID, ElectedAt: driver.Time(x.ElectedAt), ExpiresAt: driver.Time(x.ExpiresAt)}
}
