package postgres

import (
	"context"

	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/driver/internal/nullable"
	"github.com/cks-dev/cks/driver/postgres/internal/dbsqlc"
	"github.com/cks-dev/cks/store"
)

// LivenessUpsert implements driver.LivenessExecutor.
func (e *executor) LivenessUpsert(ctx context.Context, r driver.LivenessRow) error {
	return mapErr("liveness upsert "+r.InstanceID, e.d.q.LivenessUpsert(ctx, e.db, dbsqlc.LivenessUpsertParams{
		InstanceID:        r.InstanceID,
		ProcessKind:       r.ProcessKind,
		Hostname:          r.Hostname,
		Pid:               int32(r.PID),
		LivenessIntervalS: r.LivenessIntervalS,
		StartedAt:         store.Time(r.StartedAt),
		LastHeartbeatAt:   store.Time(r.LastHeartbeatAt),
		CurrentTaskID:     nullable.Int(r.CurrentTaskID),
		CurrentTaskType:   nullable.String(r.CurrentTaskType),
	}))
}

// LivenessList implements driver.LivenessExecutor.
func (e *executor) LivenessList(ctx context.Context) ([]driver.LivenessRow, error) {
	rows, err := e.d.q.LivenessList(ctx, e.db)
	if err != nil {
		return nil, mapErr("liveness list", err)
	}
	out := make([]driver.LivenessRow, len(rows))
	for i, r := range rows {
		out[i] = livenessRow(r)
	}
	return out, nil
}

// LivenessGet implements driver.LivenessExecutor.
func (e *executor) LivenessGet(ctx context.Context, instanceID string) (driver.LivenessRow, error) {
	r, err := e.d.q.LivenessGet(ctx, e.db, instanceID)
	if err != nil {
		return driver.LivenessRow{}, mapErr("liveness get "+instanceID, err)
	}
	return livenessRow(r), nil
}

// LivenessLatest implements driver.LivenessExecutor.
func (e *executor) LivenessLatest(ctx context.Context, kind string) (driver.LivenessRow, error) {
	r, err := e.d.q.LivenessLatest(ctx, e.db, kind)
	if err != nil {
		return driver.LivenessRow{}, mapErr("liveness latest "+kind, err)
	}
	return livenessRow(r), nil
}

// LivenessSetDesiredState implements driver.LivenessExecutor.
func (e *executor) LivenessSetDesiredState(ctx context.Context, instanceID, state string) (bool, error) {
	n, err := e.d.q.LivenessSetDesiredState(ctx, e.db, dbsqlc.LivenessSetDesiredStateParams{
		DesiredState: nullable.String(state), InstanceID: instanceID})
	return n > 0, mapErr("liveness set desired state "+instanceID, err)
}

func livenessRow(r dbsqlc.CksAgentLiveness) driver.LivenessRow {
	return driver.LivenessRow{
		InstanceID:        r.InstanceID,
		ProcessKind:       r.ProcessKind,
		Hostname:          r.Hostname,
		PID:               int(r.Pid),
		LivenessIntervalS: r.LivenessIntervalS,
		StartedAt:         store.Time(r.StartedAt),
		LastHeartbeatAt:   store.Time(r.LastHeartbeatAt),
		CurrentTaskID:     nullable.Deref(r.CurrentTaskID),
		CurrentTaskType:   nullable.Deref(r.CurrentTaskType),
		DesiredState:      nullable.Deref(r.DesiredState),
	}
}
