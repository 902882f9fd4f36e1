package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cks-dev/cks/store"
	"github.com/jackc/pgx/v5"
)

// Text sort keys use COLLATE "C" (byte order) so ties break exactly as in the
// SQLite backend, whatever the database's default collation.
const livenessColumns = `instance_id, process_kind, hostname, pid, liveness_interval_s,
	started_at, last_heartbeat_at, current_task_id, current_task_type`

// livenessRead is the column list of every liveness read, in scanLiveness' order.
const livenessRead = livenessColumns + `, desired_state`

// UpsertAgentLiveness implements store.Liveness.
func (s *Store) UpsertAgentLiveness(ctx context.Context, r store.AgentLiveness) error {
	if err := r.Validate(); err != nil {
		return err
	}
	var taskType *string
	if r.CurrentTaskType != "" {
		taskType = &r.CurrentTaskType
	}
	_, err := s.pool.Exec(ctx, `
INSERT INTO cks_agent_liveness (`+livenessColumns+`)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (instance_id) DO UPDATE SET
	process_kind = excluded.process_kind,
	hostname = excluded.hostname,
	pid = excluded.pid,
	liveness_interval_s = excluded.liveness_interval_s,
	last_heartbeat_at = excluded.last_heartbeat_at,
	current_task_id = excluded.current_task_id,
	current_task_type = excluded.current_task_type`,
		r.InstanceID, r.ProcessKind, r.Hostname, r.PID, r.LivenessIntervalS,
		store.Time(r.StartedAt), store.Time(r.LastHeartbeatAt), r.CurrentTaskID, taskType)
	if err != nil {
		return s.fault(fmt.Errorf("postgres: upsert liveness %s: %w", r.InstanceID, err))
	}
	return nil
}

// ListAgentLiveness implements store.Liveness.
func (s *Store) ListAgentLiveness(ctx context.Context) ([]store.AgentLiveness, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+livenessRead+`
FROM cks_agent_liveness ORDER BY started_at DESC, instance_id COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("postgres: list liveness: %w", err)
	}
	defer rows.Close()
	var out []store.AgentLiveness
	for rows.Next() {
		r, err := scanLiveness(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list liveness: %w", err)
	}
	return out, nil
}

// GetAgentLiveness implements store.Liveness.
func (s *Store) GetAgentLiveness(ctx context.Context, instanceID string) (store.AgentLiveness, error) {
	if err := store.ValidateText("instance_id", instanceID); err != nil {
		return store.AgentLiveness{}, err
	}
	row := s.pool.QueryRow(ctx, `SELECT `+livenessRead+`
FROM cks_agent_liveness WHERE instance_id = $1`, instanceID)
	r, err := scanLiveness(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("process instance %q: %w", instanceID, store.ErrNotFound)
	}
	return r, err
}

// LatestAgentLiveness implements store.Liveness.
func (s *Store) LatestAgentLiveness(ctx context.Context, kind string) (store.AgentLiveness, error) {
	if err := store.ValidateText("process_kind", kind); err != nil {
		return store.AgentLiveness{}, err
	}
	row := s.pool.QueryRow(ctx, `SELECT `+livenessRead+`
FROM cks_agent_liveness WHERE process_kind = $1
ORDER BY started_at DESC, last_heartbeat_at DESC, instance_id COLLATE "C" LIMIT 1`, kind)
	r, err := scanLiveness(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("process kind %q: %w", kind, store.ErrNotFound)
	}
	return r, err
}

func scanLiveness(row pgx.Row) (store.AgentLiveness, error) {
	var (
		r                 store.AgentLiveness
		taskType, desired *string
	)
	err := row.Scan(&r.InstanceID, &r.ProcessKind, &r.Hostname, &r.PID, &r.LivenessIntervalS,
		&r.StartedAt, &r.LastHeartbeatAt, &r.CurrentTaskID, &taskType, &desired)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return store.AgentLiveness{}, err
		}
		return store.AgentLiveness{}, fmt.Errorf("postgres: scan liveness: %w", err)
	}
	r.StartedAt = store.Time(r.StartedAt)
	r.LastHeartbeatAt = store.Time(r.LastHeartbeatAt)
	if taskType != nil {
		r.CurrentTaskType = *taskType
	}
	if desired != nil {
		r.DesiredState = *desired
	}
	return r, nil
}

// RequestAgentStop implements store.Liveness.
func (s *Store) RequestAgentStop(ctx context.Context, instanceID string) (bool, error) {
	if err := store.ValidateText("instance_id", instanceID); err != nil {
		return false, err
	}
	var found bool
	err := s.write(ctx, "request agent stop", func(tx pgx.Tx, _ time.Time) error {
		tag, err := tx.Exec(ctx, `UPDATE cks_agent_liveness SET desired_state = $1 WHERE instance_id = $2`,
			store.DesiredStopRequested, instanceID)
		if err != nil {
			return fmt.Errorf("postgres: request stop of %s: %w", instanceID, err)
		}
		if found = tag.RowsAffected() > 0; !found {
			return nil
		}
		return publish(ctx, tx, store.TopicAgentStop)
	})
	return found, err
}
