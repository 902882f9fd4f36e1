package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/cks-dev/cks/internal/driver/schema"
	"github.com/jackc/pgx/v5"
)

// upgrade holds the SQL of the schema step that is not a query of the
// driver: the lock, the catalog reads, and the backfills of columns added
// to an older database (backfill/TABLE.COLUMN.sql), and the statements that carry a retired
// column into its replacement (retire/TABLE.COLUMN.sql).
//
//go:embed upgrade/*.sql upgrade/backfill/*.sql upgrade/retire/*.sql
var upgrade embed.FS

// ensureSchema brings the current schema (the first existing entry of the
// search_path) to the current shape (schema.Apply) in one transaction, under
// an advisory lock keyed by the schema's name, so that processes opening one
// database at the same moment apply the step one after the other.
func (d *Driver) ensureSchema(ctx context.Context) error {
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // no-op after commit
	currentSQL, err := readSQL("current_schema.sql")
	if err != nil {
		return err
	}
	var current *string
	if err := tx.QueryRow(ctx, currentSQL).Scan(&current); err != nil {
		return fmt.Errorf("current schema: %w", err)
	}
	if current == nil {
		return errors.New("no schema of the search_path exists; create it or fix search_path")
	}
	lockSQL, err := readSQL("lock.sql")
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, lockSQL, *current); err != nil {
		return fmt.Errorf("schema lock: %w", err)
	}
	err = schema.Apply(ctx, schema.ApplyParams{
		Dialect: schema.Postgres,
		Files:   upgrade,
		Query: func(ctx context.Context, q string, row func(a, b string)) error {
			rows, err := tx.Query(ctx, q)
			if err != nil {
				return err
			}
			var a, b string
			_, err = pgx.ForEachRow(rows, []any{&a, &b}, func() error { row(a, b); return nil })
			return err
		},
		Exec: func(ctx context.Context, stmt string) error {
			_, err := tx.Exec(ctx, stmt)
			return err
		},
		Writable: func(ctx context.Context) error { return d.readOnly(ctx, tx) },
	})
	if err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// readSQL returns the statement in upgrade/file.
func readSQL(file string) (string, error) {
	b, err := upgrade.ReadFile("upgrade/" + file)
	return string(b), err
}
