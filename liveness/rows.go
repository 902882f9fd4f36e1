package liveness

import (
	"context"
	"errors"
	"fmt"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/store"
)

// Rows is store.Liveness over a driver: the heartbeat rows of ADR-014 and
// the remote stop of ADR-016, every rule of them here, once for both
// dialects — the validation of a row, the upsert that never changes
// started_at or desired_state (the driver's LivenessUpsert leaves both), the
// not-found answers, and a stop request that sets desired_state and
// publishes cks.TopicAgentStop in one transaction, or reports false when
// there is no such instance. Writes run in a driver transaction (so the
// driver remembers their storage faults); reads run on the driver's pool.
type Rows struct {
	db driver.Driver
}

var _ store.Liveness = (*Rows)(nil)

// NewRows returns the liveness rows of db.
func NewRows(db driver.Driver) *Rows { return &Rows{db: db} }

// UpsertAgentLiveness implements store.Liveness.
func (l *Rows) UpsertAgentLiveness(ctx context.Context, r cks.AgentLiveness) error {
	if err := r.Validate(); err != nil {
		return err
	}
	row := driver.LivenessRow{InstanceID: r.InstanceID, ProcessKind: r.ProcessKind, Hostname: r.Hostname, PID: r.PID,
		LivenessIntervalS: r.LivenessIntervalS, StartedAt: driver.Time(r.StartedAt), LastHeartbeatAt: driver.Time(r.LastHeartbeatAt),
		CurrentTaskType: r.CurrentTaskType}
	if r.CurrentTaskID != nil {
		row.CurrentTaskID = *r.CurrentTaskID
	}
	err := l.db.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		return ex.LivenessUpsert(ctx, row)
	})
	if err != nil {
		return fmt.Errorf("upsert liveness %s: %w", r.InstanceID, err)
	}
	return nil
}

// ListAgentLiveness implements store.Liveness.
func (l *Rows) ListAgentLiveness(ctx context.Context) ([]cks.AgentLiveness, error) {
	rows, err := l.db.Executor().LivenessList(ctx)
	if err != nil {
		return nil, fmt.Errorf("list liveness: %w", err)
	}
	out := make([]cks.AgentLiveness, len(rows))
	for i, r := range rows {
		out[i] = livenessOf(r)
	}
	return out, nil
}

// GetAgentLiveness implements store.Liveness.
func (l *Rows) GetAgentLiveness(ctx context.Context, instanceID string) (cks.AgentLiveness, error) {
	if err := cks.ValidateText("instance_id", instanceID); err != nil {
		return cks.AgentLiveness{}, err
	}
	r, err := l.db.Executor().LivenessGet(ctx, instanceID)
	if errors.Is(err, driver.ErrNoRows) {
		return cks.AgentLiveness{}, fmt.Errorf("process instance %q: %w", instanceID, cks.ErrNotFound)
	}
	if err != nil {
		return cks.AgentLiveness{}, fmt.Errorf("get liveness %s: %w", instanceID, err)
	}
	return livenessOf(r), nil
}

// LatestAgentLiveness implements store.Liveness.
func (l *Rows) LatestAgentLiveness(ctx context.Context, kind string) (cks.AgentLiveness, error) {
	if err := cks.ValidateText("process_kind", kind); err != nil {
		return cks.AgentLiveness{}, err
	}
	r, err := l.db.Executor().LivenessLatest(ctx, kind)
	if errors.Is(err, driver.ErrNoRows) {
		return cks.AgentLiveness{}, fmt.Errorf("process kind %q: %w", kind, cks.ErrNotFound)
	}
	if err != nil {
		return cks.AgentLiveness{}, fmt.Errorf("latest liveness of %s: %w", kind, err)
	}
	return livenessOf(r), nil
}

// RequestAgentStop implements store.Liveness: the update and the
// notification commit together, and a missing row is false, not an error.
func (l *Rows) RequestAgentStop(ctx context.Context, instanceID string) (bool, error) {
	if err := cks.ValidateText("instance_id", instanceID); err != nil {
		return false, err
	}
	var found bool
	err := l.db.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		var err error
		if found, err = ex.LivenessSetDesiredState(ctx, instanceID, cks.DesiredStopRequested); err != nil || !found {
			return err
		}
		return ex.Notify(ctx, cks.TopicAgentStop)
	})
	if err != nil {
		return false, fmt.Errorf("request stop of %s: %w", instanceID, err)
	}
	return found, nil
}

// livenessOf is the record of a row.
func livenessOf(r driver.LivenessRow) cks.AgentLiveness {
	a := cks.AgentLiveness{InstanceID: r.InstanceID, ProcessKind: r.ProcessKind, Hostname: r.Hostname, PID: r.PID,
		LivenessIntervalS: r.LivenessIntervalS, StartedAt: r.StartedAt, LastHeartbeatAt: r.LastHeartbeatAt,
		CurrentTaskType: r.CurrentTaskType, DesiredState: r.DesiredState}
	if r.CurrentTaskID != 0 {
		id := r.CurrentTaskID
		a.CurrentTaskID = &id
	}
	return a
}
