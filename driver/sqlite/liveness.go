package sqlite

import (
	"context"

	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/driver/internal/nullable"
	"github.com/cks-dev/cks/driver/sqlite/internal/dbsqlc"
)

// LivenessUpsert implements driver.LivenessExecutor.
func (e *executor) LivenessUpsert(ctx context.Context, r driver.LivenessRow) error {
	return e.write(ctx, "liveness upsert", func(w *wtx) error {
		return mapErr("liveness upsert "+r.InstanceID, e.d.q.LivenessUpsert(ctx, w, dbsqlc.LivenessUpsertParams{
			InstanceID:        r.InstanceID,
			ProcessKind:       r.ProcessKind,
			Hostname:          r.Hostname,
			Pid:               int64(r.PID),
			LivenessIntervalS: r.LivenessIntervalS,
			StartedAt:         fmtTime(r.StartedAt),
			LastHeartbeatAt:   fmtTime(r.LastHeartbeatAt),
			CurrentTaskID:     nullable.Int(r.CurrentTaskID),
			CurrentTaskType:   nullable.String(r.CurrentTaskType),
		}))
	})
}

// LivenessList implements driver.LivenessExecutor.
func (e *executor) LivenessList(ctx context.Context) ([]driver.LivenessRow, error) {
	rows, err := e.d.q.LivenessList(ctx, e.read)
	if err != nil {
		return nil, mapErr("liveness list", err)
	}
	out := make([]driver.LivenessRow, 0, len(rows))
	for _, r := range rows {
		l, err := livenessRow(r)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// LivenessGet implements driver.LivenessExecutor.
func (e *executor) LivenessGet(ctx context.Context, instanceID string) (driver.LivenessRow, error) {
	r, err := e.d.q.LivenessGet(ctx, e.read, instanceID)
	if err != nil {
		return driver.LivenessRow{}, mapErr("liveness get "+instanceID, err)
	}
	return livenessRow(r)
}

// LivenessLatest implements driver.LivenessExecutor.
func (e *executor) LivenessLatest(ctx context.Context, kind string) (driver.LivenessRow, error) {
	r, err := e.d.q.LivenessLatest(ctx, e.read, kind)
	if err != nil {
		return driver.LivenessRow{}, mapErr("liveness latest "+kind, err)
	}
	return livenessRow(r)
}

// LivenessSetDesiredState implements driver.LivenessExecutor.
func (e *executor) LivenessSetDesiredState(ctx context.Context, instanceID, state string) (bool, error) {
	var n int64
	err := e.write(ctx, "liveness set desired state", func(w *wtx) error {
		var err error
		n, err = e.d.q.LivenessSetDesiredState(ctx, w, dbsqlc.LivenessSetDesiredStateParams{
			DesiredState: nullable.String(state), InstanceID: instanceID})
		return mapErr("liveness set desired state "+instanceID, err)
	})
	return n > 0, err
}

func livenessRow(r dbsqlc.CksAgentLiveness) (driver.LivenessRow, error) {
	started, err := parseTime(r.StartedAt)
	if err != nil {
		return driver.LivenessRow{}, err
	}
	beat, err := parseTime(r.LastHeartbeatAt)
	if err != nil {
		return driver.LivenessRow{}, err
	}
	return driver.LivenessRow{
		InstanceID:        r.InstanceID,
		ProcessKind:       r.ProcessKind,
		Hostname:          r.Hostname,
		PID:               int(r.Pid),
		LivenessIntervalS: r.LivenessIntervalS,
		StartedAt:         started,
		LastHeartbeatAt:   beat,
		CurrentTaskID:     nullable.Deref(r.CurrentTaskID),
		CurrentTaskType:   nullable.Deref(r.CurrentTaskType),
		DesiredState:      nullable.Deref(r.DesiredState),
	}, nil
}
