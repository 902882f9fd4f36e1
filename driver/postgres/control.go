package postgres

import (
	"context"
	"time"

	"github.com/cks-dev/cks/driver/postgres/internal/dbsqlc"
	"github.com/cks-dev/cks/store"
)

// SweeperControlUpsert implements driver.ControlExecutor.
func (e *executor) SweeperControlUpsert(ctx context.Context, id string, running bool, at time.Time) error {
	return mapErr("sweeper control upsert "+id, e.d.q.SweeperControlUpsert(ctx, e.db, dbsqlc.SweeperControlUpsertParams{
		AgentID: id, DesiredRunning: running, UpdatedAt: store.Time(at)}))
}

// SweeperControlGet implements driver.ControlExecutor.
func (e *executor) SweeperControlGet(ctx context.Context, id string) (bool, error) {
	running, err := e.d.q.SweeperControlGet(ctx, e.db, id)
	return running, mapErr("sweeper control get "+id, err)
}
