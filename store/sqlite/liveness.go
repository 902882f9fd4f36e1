package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/cks-dev/cks/store"
)

const livenessColumns = `instance_id, process_kind, hostname, pid, liveness_interval_s,
	started_at, last_heartbeat_at, current_task_id, current_task_type`

// livenessRead is the column list of every liveness read, in scanLiveness' order.
const livenessRead = livenessColumns + `, desired_state`

// UpsertAgentLiveness implements store.Liveness.
func (s *Store) UpsertAgentLiveness(ctx context.Context, r store.AgentLiveness) error {
	if err := r.Validate(); err != nil {
		return err
	}
	var taskType sql.NullString
	if r.CurrentTaskType != "" {
		taskType = sql.NullString{String: r.CurrentTaskType, Valid: true}
	}
	err := s.write(ctx, "upsert liveness", func(tx *wtx, _ time.Time) error {
		_, err := tx.ExecContext(ctx, `
INSERT INTO cks_agent_liveness (`+livenessColumns+`)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(instance_id) DO UPDATE SET
	process_kind = excluded.process_kind,
	hostname = excluded.hostname,
	pid = excluded.pid,
	liveness_interval_s = excluded.liveness_interval_s,
	last_heartbeat_at = excluded.last_heartbeat_at,
	current_task_id = excluded.current_task_id,
	current_task_type = excluded.current_task_type`,
			r.InstanceID, r.ProcessKind, r.Hostname, r.PID, r.LivenessIntervalS,
			fmtTime(r.StartedAt), fmtTime(r.LastHeartbeatAt), r.CurrentTaskID, taskType)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: upsert liveness %s: %w", r.InstanceID, err)
	}
	return nil
}

// ListAgentLiveness implements store.Liveness.
func (s *Store) ListAgentLiveness(ctx context.Context) ([]store.AgentLiveness, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT `+livenessRead+`
FROM cks_agent_liveness ORDER BY started_at DESC, instance_id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list liveness: %w", err)
	}
	return collect(rows, "list liveness", scanLiveness)
}

// GetAgentLiveness implements store.Liveness.
func (s *Store) GetAgentLiveness(ctx context.Context, instanceID string) (store.AgentLiveness, error) {
	if err := store.ValidateText("instance_id", instanceID); err != nil {
		return store.AgentLiveness{}, err
	}
	row := s.reader.QueryRowContext(ctx, `SELECT `+livenessRead+`
FROM cks_agent_liveness WHERE instance_id = ?`, instanceID)
	r, err := scanLiveness(row)
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("process instance %q: %w", instanceID, store.ErrNotFound)
	}
	return r, err
}

// LatestAgentLiveness implements store.Liveness.
func (s *Store) LatestAgentLiveness(ctx context.Context, kind string) (store.AgentLiveness, error) {
	if err := store.ValidateText("process_kind", kind); err != nil {
		return store.AgentLiveness{}, err
	}
	row := s.reader.QueryRowContext(ctx, `SELECT `+livenessRead+`
FROM cks_agent_liveness WHERE process_kind = ?
ORDER BY started_at DESC, last_heartbeat_at DESC, instance_id LIMIT 1`, kind)
	r, err := scanLiveness(row)
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("process kind %q: %w", kind, store.ErrNotFound)
	}
	return r, err
}

type scanner interface{ Scan(dest ...any) error }

func scanLiveness(sc scanner) (store.AgentLiveness, error) {
	var (
		r                  store.AgentLiveness
		started, heartbeat string
		taskID             sql.NullInt64
		taskType, desired  sql.NullString
	)
	err := sc.Scan(&r.InstanceID, &r.ProcessKind, &r.Hostname, &r.PID, &r.LivenessIntervalS,
		&started, &heartbeat, &taskID, &taskType, &desired)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return r, err
		}
		return r, fmt.Errorf("sqlite: scan liveness: %w", err)
	}
	if r.StartedAt, err = parseTime(started); err != nil {
		return r, err
	}
	if r.LastHeartbeatAt, err = parseTime(heartbeat); err != nil {
		return r, err
	}
	if taskID.Valid {
		id := taskID.Int64
		r.CurrentTaskID = &id
	}
	r.CurrentTaskType = taskType.String
	r.DesiredState = desired.String
	return r, nil
}

// RequestAgentStop implements store.Liveness.
func (s *Store) RequestAgentStop(ctx context.Context, instanceID string) (bool, error) {
	if err := store.ValidateText("instance_id", instanceID); err != nil {
		return false, err
	}
	var found bool
	err := s.write(ctx, "request agent stop", func(tx *wtx, _ time.Time) error {
		res, err := tx.ExecContext(ctx, `UPDATE cks_agent_liveness SET desired_state = ? WHERE instance_id = ?`,
			store.DesiredStopRequested, instanceID)
		if err != nil {
			return fmt.Errorf("sqlite: request stop of %s: %w", instanceID, err)
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err
		}
		found = true
		return publish(ctx, tx, store.TopicAgentStop)
	})
	return found, err
}
