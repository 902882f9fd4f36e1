package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/cks-dev/cks/store"
	"github.com/jackc/pgx/v5"
)

// Text sort keys use COLLATE "C" (byte order) so ties break exactly as in the
// SQLite backend, whatever the database's default collation.
const livenessColumns = `instance_id, process_kind, hostname, pid, liveness_interval_s,
	started_at, last_heartbeat_at, current_task_id, current_task_type`

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
		return fmt.Errorf("postgres: upsert liveness %s: %w", r.InstanceID, err)
	}
	return nil
}

// ListAgentLiveness implements store.Liveness.
func (s *Store) ListAgentLiveness(ctx context.Context) ([]store.AgentLiveness, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+livenessColumns+`
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
	row := s.pool.QueryRow(ctx, `SELECT `+livenessColumns+`
FROM cks_agent_liveness WHERE instance_id = $1`, instanceID)
	r, err := scanLiveness(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("process instance %q: %w", instanceID, store.ErrNotFound)
	}
	return r, err
}

// LatestAgentLiveness implements store.Liveness.
func (s *Store) LatestAgentLiveness(ctx context.Context, kind string) (store.AgentLiveness, error) {
	row := s.pool.QueryRow(ctx, `SELECT `+livenessColumns+`
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
		r        store.AgentLiveness
		taskType *string
	)
	err := row.Scan(&r.InstanceID, &r.ProcessKind, &r.Hostname, &r.PID, &r.LivenessIntervalS,
		&r.StartedAt, &r.LastHeartbeatAt, &r.CurrentTaskID, &taskType)
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
	return r, nil
}
