package sqlite

import (
	"context"
	"embed"

	"github.com/cks-dev/cks/internal/driver/schema"
)

// upgrade holds the SQL of the schema step that is not a query of the
// driver: the catalog reads, and the backfills of columns added to an older
// database (backfill/TABLE.COLUMN.sql), and the statements that carry a retired
// column into its replacement (retire/TABLE.COLUMN.sql).
//
//go:embed upgrade/*.sql upgrade/backfill/*.sql upgrade/retire/*.sql
var upgrade embed.FS

// ensureSchema brings the database to the current shape (schema.Apply) in
// one write transaction, so that handles opening one file at once apply it
// one after the other. A file opened read-only whose schema is current
// needs nothing; one whose schema must change is its read-only fault.
func (d *Driver) ensureSchema(ctx context.Context) error {
	return d.write(ctx, func(w *wtx) error {
		return schema.Apply(ctx, schema.ApplyParams{
			Dialect: schema.SQLite,
			Files:   upgrade,
			Query: func(ctx context.Context, q string, row func(a, b string)) error {
				rows, err := w.Tx.QueryContext(ctx, q)
				if err != nil {
					return err
				}
				defer rows.Close()
				for rows.Next() {
					var a, b string
					if err := rows.Scan(&a, &b); err != nil {
						return err
					}
					row(a, b)
				}
				return rows.Err()
			},
			Exec: func(ctx context.Context, stmt string) error {
				_, err := w.Tx.ExecContext(ctx, stmt)
				return err
			},
			Writable: func(context.Context) error {
				if d.readOnly {
					return d.readOnlyError()
				}
				return nil
			},
		})
	})
}
