package sqlite

import (
	"context"
	"time"

	"github.com/cks-dev/cks/driver/sqlite/internal/dbsqlc"
)

// SweeperControlUpsert implements driver.ControlExecutor.
func (e *executor) SweeperControlUpsert(ctx context.Context, id string, running bool, at time.Time) error {
	return e.write(ctx, "sweeper control upsert", func(w *wtx) error {
		return mapErr("sweeper control upsert "+id, e.d.q.SweeperControlUpsert(ctx, w, dbsqlc.SweeperControlUpsertParams{
			AgentID: id, DesiredRunning: running, UpdatedAt: fmtTime(at)}))
	})
}

// SweeperControlGet implements driver.ControlExecutor.
func (e *executor) SweeperControlGet(ctx context.Context, id string) (bool, error) {
	running, err := e.d.q.SweeperControlGet(ctx, e.read, id)
	return running, mapErr("sweeper control get "+id, err)
}
