package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"

	"github.com/cks-dev/cks/driver/schema"
)

// upgrade holds the SQL of the schema step that is not a query of the
// driver: the catalog reads, and the backfills of columns added to an older
// database (backfill/TABLE.COLUMN.sql), and the statements that carry a retired
// column into its replacement (retire/TABLE.COLUMN.sql).
//
//go:embed upgrade/*.sql upgrade/backfill/*.sql upgrade/retire/*.sql
var upgrade embed.FS

// ensureSchema brings the database to the current shape (schema.Plan) in
// one write transaction, so that handles opening one file at once apply it
// one after the other. A file opened read-only whose schema is current
// needs nothing; one whose schema must change is its read-only fault.
func (d *Driver) ensureSchema(ctx context.Context) error {
	return d.write(ctx, func(w *wtx) error {
		have, err := existing(ctx, w.Tx)
		if err != nil {
			return err
		}
		up, err := schema.ReadUpgrade(upgrade)
		if err != nil {
			return err
		}
		plan := schema.Plan(schema.SQLite, have, up)
		if len(plan) > 0 && d.readOnly {
			return fmt.Errorf("its schema must be created or upgraded: %w", d.readOnlyError())
		}
		for _, stmt := range plan {
			if _, err := w.Tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("%q: %w", stmt, err)
			}
		}
		return nil
	})
}

// existing reads what the database holds of the schema from its catalog.
func existing(ctx context.Context, tx *sql.Tx) (schema.Existing, error) {
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

// catalog runs the catalog read upgrade/file, whose rows are pairs of
// strings.
func catalog(ctx context.Context, tx *sql.Tx, file string, row func(a, b string)) error {
	q, err := upgrade.ReadFile("upgrade/" + file)
	if err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, string(q))
	if err != nil {
		return fmt.Errorf("catalog %s: %w", file, err)
	}
	defer rows.Close()
	for rows.Next() {
		var a, b string
		if err := rows.Scan(&a, &b); err != nil {
			return fmt.Errorf("catalog %s: %w", file, err)
		}
		row(a, b)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("catalog %s: %w", file, err)
	}
	return nil
}
