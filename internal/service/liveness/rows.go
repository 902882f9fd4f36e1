package liveness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// UpsertAgentLiveness inserts the row for r.InstanceID or updates every field
// except StartedAt, which is set once by the first write.
func (s *Service) UpsertAgentLiveness(ctx context.Context, r cks.AgentLiveness) error {
	if err := r.Validate(); err != nil {
		return err
	}
	err := s.db.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		return upsert(ctx, ex, r)
	})
	if err != nil {
		return fmt.Errorf("upsert liveness %s: %w", r.InstanceID, err)
	}
	return nil
}

// upsert writes r's row, which only whoever wrote it first may write
// again (its ReportedBy).
func upsert(ctx context.Context, ex driver.Executor, r cks.AgentLiveness) error {
	wrote, err := ex.LivenessUpsert(ctx, rowOf(r))
	if err == nil && !wrote {
		err = reportedByAnother(r.InstanceID)
	}
	return err
}

// reportedByAnother is the conflict of a write of instance id's row by
// someone other than whoever wrote it first.
func reportedByAnother(id string) error {
	return fmt.Errorf("process instance %q is reported by another principal: %w", id, cks.ErrConflict)
}

// ListAgentLiveness returns every row, newest-started first.
func (s *Service) ListAgentLiveness(ctx context.Context) ([]cks.AgentLiveness, error) {
	rows, err := s.db.Executor().LivenessList(ctx)
	if err != nil {
		return nil, fmt.Errorf("list liveness: %w", err)
	}
	out := make([]cks.AgentLiveness, len(rows))
	for i, r := range rows {
		out[i] = livenessOf(r)
	}
	return out, nil
}

// GetAgentLiveness returns one instance's row or ErrNotFound.
func (s *Service) GetAgentLiveness(ctx context.Context, instanceID string) (cks.AgentLiveness, error) {
	if err := cks.ValidateText("instance_id", instanceID); err != nil {
		return cks.AgentLiveness{}, err
	}
	r, err := s.db.Executor().LivenessGet(ctx, instanceID)
	if errors.Is(err, driver.ErrNoRows) {
		return cks.AgentLiveness{}, fmt.Errorf("process instance %q: %w", instanceID, cks.ErrNotFound)
	}
	if err != nil {
		return cks.AgentLiveness{}, fmt.Errorf("get liveness %s: %w", instanceID, err)
	}
	return livenessOf(r), nil
}

// LatestAgentLiveness returns the most recently started instance of kind, or
// ErrNotFound when no instance of that kind ever reported.
func (s *Service) LatestAgentLiveness(ctx context.Context, kind string) (cks.AgentLiveness, error) {
	if err := cks.ValidateText("process_kind", kind); err != nil {
		return cks.AgentLiveness{}, err
	}
	r, err := s.db.Executor().LivenessLatest(ctx, kind)
	if errors.Is(err, driver.ErrNoRows) {
		return cks.AgentLiveness{}, fmt.Errorf("process kind %q: %w", kind, cks.ErrNotFound)
	}
	if err != nil {
		return cks.AgentLiveness{}, fmt.Errorf("latest liveness of %s: %w", kind, err)
	}
	return livenessOf(r), nil
}

// RequestAgentStop sets desired_state to DesiredStopRequested on the row
// of instanceID and publishes TopicAgentStop in the same transaction
// (ADR-016). It only ever updates: it returns false, and no error, when
// no such row exists, and it never touches last_heartbeat_at (a stop
// request is no evidence that the process is alive).
//
// the update and the notification commit together, and a missing row is
// false, not an error.
func (s *Service) RequestAgentStop(ctx context.Context, instanceID string) (bool, error) {
	if err := cks.ValidateText("instance_id", instanceID); err != nil {
		return false, err
	}
	var found bool
	err := s.db.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
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

// RecordExited records instance instanceID as exited, for a process that
// could not say so itself (killed, or dead before its last write): its row
// as the process's own graceful exit leaves it (Exited), in one
// transaction with the read, so it reads stopped — `exited` — at once. It
// returns the row as written, and false, with no error, when no such
// instance ever reported.
func (s *Service) RecordExited(ctx context.Context, instanceID string) (cks.AgentLiveness, bool, error) {
	if err := cks.ValidateText("instance_id", instanceID); err != nil {
		return cks.AgentLiveness{}, false, err
	}
	var out cks.AgentLiveness
	found := false
	err := s.db.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		found = false
		r, err := ex.LivenessGet(ctx, instanceID)
		if errors.Is(err, driver.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		out, found = Exited(livenessOf(r), driver.Time(s.clock.Now())), true
		return upsert(ctx, ex, out)
	})
	if err != nil {
		return cks.AgentLiveness{}, false, fmt.Errorf("record %s exited: %w", instanceID, err)
	}
	return out, found, nil
}

// RecordAllExited records every instance alive by its row as exited
// (Exited), in transactions of at most PruneBatch rows, and returns how
// many it recorded. It is for a database no process can have open — one a
// restore has just put in place, whose rows were alive when the backup
// was taken — so that those rows neither read alive nor block a restore.
func (s *Service) RecordAllExited(ctx context.Context) (int, error) {
	total := 0
	for {
		n := 0
		err := s.db.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
			now := driver.Time(s.clock.Now())
			rows, err := ex.LivenessAlive(ctx, driver.LivenessAliveParams{Now: now, AfterStartedAt: endOfTime, Limit: PruneBatch})
			if err != nil {
				return err
			}
			for _, r := range rows {
				if err := upsert(ctx, ex, Exited(livenessOf(r), now)); err != nil {
					return err
				}
			}
			n = len(rows)
			return nil
		})
		if err != nil {
			return total, fmt.Errorf("record every process exited: %w", err)
		}
		if total += n; n < PruneBatch {
			return total, nil
		}
	}
}

// rowOf is the row of a record.
func rowOf(r cks.AgentLiveness) driver.LivenessRow {
	row := driver.LivenessRow{InstanceID: r.InstanceID, ProcessKind: r.ProcessKind, Hostname: r.Hostname, PID: r.PID,
		LivenessIntervalS: r.LivenessIntervalS, StartedAt: driver.Time(r.StartedAt), LastHeartbeatAt: driver.Time(r.LastHeartbeatAt),
		CurrentTaskType: r.CurrentTaskType, ExitedAt: driver.Time(r.ExitedAt), AliveUntil: AliveUntil(r), ReportedBy: r.ReportedBy}
	if r.CurrentTaskID != nil {
		row.CurrentTaskID = *r.CurrentTaskID
	}
	if len(r.TaskTypes) > 0 {
		b, _ := json.Marshal(r.TaskTypes) // a []string always marshals
		row.TaskTypes = string(b)
	}
	return row
}

// livenessOf is the record of a row.
func livenessOf(r driver.LivenessRow) cks.AgentLiveness {
	if r.ExitedAt.IsZero() && r.LastHeartbeatAt.Before(r.StartedAt) {
		r.ExitedAt, r.LastHeartbeatAt = r.StartedAt, r.StartedAt
	}
	a := cks.AgentLiveness{InstanceID: r.InstanceID, ProcessKind: r.ProcessKind, Hostname: r.Hostname, PID: r.PID,
		LivenessIntervalS: r.LivenessIntervalS, StartedAt: r.StartedAt, LastHeartbeatAt: r.LastHeartbeatAt,
		CurrentTaskType: r.CurrentTaskType, DesiredState: r.DesiredState, ExitedAt: r.ExitedAt, ReportedBy: r.ReportedBy}
	if r.CurrentTaskID != 0 {
		id := r.CurrentTaskID
		a.CurrentTaskID = &id
	}
	if r.TaskTypes != "" {
		// Written only by rowOf; a value that is not its JSON reads as no
		// types rather than failing the whole listing.
		_ = json.Unmarshal([]byte(r.TaskTypes), &a.TaskTypes)
	}
	return a
}

// PruneBatch is how many rows one transaction of Prune deletes: short
// transactions, so that heartbeats and the one SQLite writer never wait
// long behind the retention sweeper.
const PruneBatch = 1000

// Prune deletes the history older than before: the instances that last
// reported (or exited) before it and are not alive at now, in
// transactions of at most PruneBatch rows and at most maxRows in all (a
// bounded pass; the next goes on). It returns how many it deleted.
func (s *Service) Prune(ctx context.Context, before, now time.Time, maxRows int) (int, error) {
	total := 0
	for total < maxRows {
		limit, n := min(PruneBatch, maxRows-total), 0
		err := s.db.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
			var err error
			n, err = ex.LivenessPrune(ctx, driver.LivenessPruneParams{Before: before, Now: now, Limit: limit})
			return err
		})
		if err != nil {
			return total, fmt.Errorf("prune liveness: %w", err)
		}
		if total += n; n < limit {
			break
		}
	}
	return total, nil
}
