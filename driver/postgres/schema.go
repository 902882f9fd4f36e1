package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/cks-dev/cks/driver/schema"
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
// search_path) to the current shape (schema.Plan) in one transaction, under
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
	have, err := existing(ctx, tx)
	if err != nil {
		return err
	}
	up, err := schema.ReadUpgrade(upgrade)
	if err != nil {
		return err
	}
	plan := schema.Plan(schema.Postgres, have, up)
	if len(plan) > 0 {
		// On a read-only server the first statement would fail: say why
		// instead.
		if err := d.readOnly(ctx, tx); err != nil {
			return fmt.Errorf("its schema must be created or upgraded: %w", err)
		}
	}
	for _, stmt := range plan {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%q: %w", stmt, err)
		}
	}
	return tx.Commit(ctx)
}

// readSQL returns the statement in upgrade/file.
func readSQL(file string) (string, error) {
	b, err := upgrade.ReadFile("upgrade/" + file)
	return string(b), err
}

// existing reads what the current schema holds from the catalog.
func existing(ctx context.Context, tx pgx.Tx) (schema.Existing, error) {
	have := schema.Existing{Columns: map[string]map[string]bool{}, Indexes: map[string]bool{}, Triggers: map[string]bool{},
		References: map[string]string{}}
	err := catalog(ctx, tx, "columns.sql", func(table, column string) {
		if have.Columns[table] == nil {
			have.Columns[table] = map[string]bool{}
		}
		have.Columns[table][column] = true
	})
	if err != nil {
		return have, err
	}
	err = catalog(ctx, tx, "names.sql", func(typ, name string) {
		if typ == "index" {
			have.Indexes[name] = true
		} else {
			have.Triggers[name] = true
		}
	})
	if err != nil {
		return have, err
	}
	err = catalog(ctx, tx, "references.sql", func(column, name string) { have.References[column] = name })
	return have, err
}

// catalog runs the catalog read upgrade/file, whose rows are pairs of text.
func catalog(ctx context.Context, tx pgx.Tx, file string, row func(a, b string)) error {
	q, err := readSQL(file)
	if err != nil {
		return err
	}
	rows, err := tx.Query(ctx, q)
	if err != nil {
		return fmt.Errorf("catalog %s: %w", file, err)
	}
	var a, b string
	_, err = pgx.ForEachRow(rows, []any{&a, &b}, func() error { row(a, b); return nil })
	if err != nil {
		return fmt.Errorf("catalog %s: %w", file, err)
	}
	return nil
}
