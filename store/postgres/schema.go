package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// column is one column of a table. Columns after a table's first release must be
// addable by ALTER TABLE ADD COLUMN: nullable or with a default.
type column struct {
	name string
	def  string
}

// table is the current shape of one table. ensureSchema creates it when missing
// and adds every column an older database lacks (the seeds' convention: no
// migration runner, no version table). It mirrors store/sqlite's schema with
// Postgres types.
type table struct {
	name        string
	columns     []column
	constraints []string
	// after holds statements run after the table has its full shape (indexes,
	// triggers), each idempotent.
	after []string
}

func (t table) create() string {
	parts := make([]string, 0, len(t.columns)+len(t.constraints))
	for _, c := range t.columns {
		parts = append(parts, c.name+" "+c.def)
	}
	parts = append(parts, t.constraints...)
	return "CREATE TABLE IF NOT EXISTS " + t.name + " (\n    " + strings.Join(parts, ",\n    ") + "\n)"
}

var schema = []table{
	{
		name: "cks_agent_liveness",
		columns: []column{
			{"instance_id", "TEXT PRIMARY KEY"},
			{"process_kind", "TEXT NOT NULL"},
			{"hostname", "TEXT NOT NULL"},
			{"pid", "INTEGER NOT NULL"},
			{"liveness_interval_s", "DOUBLE PRECISION NOT NULL"},
			{"started_at", "TIMESTAMPTZ NOT NULL"},
			{"last_heartbeat_at", "TIMESTAMPTZ NOT NULL"},
			{"current_task_id", "BIGINT"},
			{"current_task_type", "TEXT"},
		},
		after: []string{
			`CREATE INDEX IF NOT EXISTS idx_agent_liveness_kind ON cks_agent_liveness(process_kind, last_heartbeat_at)`,
		},
	},
	{
		name: "cks_principals",
		columns: []column{
			{"principal_id", "TEXT PRIMARY KEY"},
			{"name", "TEXT NOT NULL"},
			{"token_hash", "TEXT NOT NULL UNIQUE"},
			{"created_at", "TIMESTAMPTZ NOT NULL"},
		},
	},
	{
		name: "cks_grants",
		columns: []column{
			{"principal_id", "TEXT NOT NULL REFERENCES cks_principals(principal_id) ON DELETE CASCADE"},
			{"resource", "TEXT NOT NULL"},
			{"permission", "TEXT NOT NULL"},
		},
		constraints: []string{"PRIMARY KEY (principal_id, resource, permission)"},
	},
}

// ensureSchema brings the current schema (the first existing entry of the
// search_path) to the current shape in one transaction. The transaction first
// takes an advisory lock keyed by that schema's name, so hubs opening one
// database at the same moment apply the step one after the other instead of
// racing on CREATE TABLE IF NOT EXISTS (which is not safe under concurrency in
// Postgres: the loser fails on the catalog's unique index).
func ensureSchema(ctx context.Context, pool *pgxpool.Pool) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // no-op after commit

	var current *string
	if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&current); err != nil {
		return fmt.Errorf("current schema: %w", err)
	}
	if current == nil {
		return fmt.Errorf("no schema of the search_path exists; create it or fix search_path")
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('cks.schema:' || $1::text, 0))`, *current); err != nil {
		return fmt.Errorf("schema lock: %w", err)
	}
	for _, t := range schema {
		if _, err := tx.Exec(ctx, t.create()); err != nil {
			return fmt.Errorf("create %s: %w", t.name, err)
		}
		have, err := columnsOf(ctx, tx, t.name)
		if err != nil {
			return err
		}
		for _, c := range t.columns {
			if have[c.name] {
				continue
			}
			if _, err := tx.Exec(ctx, "ALTER TABLE "+t.name+" ADD COLUMN "+c.name+" "+c.def); err != nil {
				return fmt.Errorf("add column %s.%s: %w", t.name, c.name, err)
			}
		}
		for _, stmt := range t.after {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("schema of %s: %w", t.name, err)
			}
		}
	}
	return tx.Commit(ctx)
}

// columnsOf returns the column names table has in the current schema.
func columnsOf(ctx context.Context, tx pgx.Tx, table string) (map[string]bool, error) {
	rows, err := tx.Query(ctx, `SELECT column_name FROM information_schema.columns
WHERE table_schema = current_schema() AND table_name = $1`, table)
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	have := make(map[string]bool, len(names))
	for _, n := range names {
		have[n] = true
	}
	return have, nil
}
