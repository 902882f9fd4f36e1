package schema

import (
	"context"
	"fmt"
	"io/fs"
)

// ApplyParams is what Apply needs of a driver: its dialect, its upgrade
// files, and how to run SQL in the transaction the schema step holds.
type ApplyParams struct {
	Dialect Dialect
	// Files holds the driver's upgrade/ directory: the catalog reads
	// upgrade/columns.sql (table, column), upgrade/names.sql ("index" or
	// "trigger", name), upgrade/references.sql (table.column, constraint)
	// upgrade/keys.sql (table, its key's columns joined by commas) and
	// upgrade/options.sql (table, one storage parameter as "name=value"), and
	// what ReadUpgrade reads.
	Files fs.FS
	// Query runs a catalog read whose rows are pairs of text, calling row
	// for each.
	Query func(ctx context.Context, sql string, row func(a, b string)) error
	// Exec runs one statement of the plan.
	Exec func(ctx context.Context, stmt string) error
	// Writable, asked only when there is a statement to run, returns why
	// the database refuses writes, or nil: a read-only database says so
	// instead of failing on the first statement.
	Writable func(ctx context.Context) error
}

// Apply brings a database to the current shape: it reads what the catalog
// holds (Existing), plans what is missing (Plan, with the driver's
// backfills and retirements) and runs it, in the caller's transaction.
func Apply(ctx context.Context, p ApplyParams) error {
	have := Existing{Columns: map[string]map[string]bool{}, Indexes: map[string]bool{}, Triggers: map[string]bool{},
		References: map[string]string{}, PrimaryKeys: map[string]string{}, Options: map[string]map[string]bool{}}
	err := catalog(ctx, p, "columns.sql", func(table, column string) {
		if have.Columns[table] == nil {
			have.Columns[table] = map[string]bool{}
		}
		have.Columns[table][column] = true
	})
	if err != nil {
		return err
	}
	err = catalog(ctx, p, "names.sql", func(typ, name string) {
		if typ == "index" {
			have.Indexes[name] = true
		} else {
			have.Triggers[name] = true
		}
	})
	if err != nil {
		return err
	}
	err = catalog(ctx, p, "references.sql", func(column, name string) { have.References[column] = name })
	if err != nil {
		return err
	}
	err = catalog(ctx, p, "keys.sql", func(table, columns string) { have.PrimaryKeys[table] = columns })
	if err != nil {
		return err
	}
	err = catalog(ctx, p, "options.sql", func(table, option string) {
		if have.Options[table] == nil {
			have.Options[table] = map[string]bool{}
		}
		have.Options[table][option] = true
	})
	if err != nil {
		return err
	}
	up, err := ReadUpgrade(p.Files)
	if err != nil {
		return err
	}
	plan := Plan(p.Dialect, have, up)
	if len(plan) > 0 {
		if err := p.Writable(ctx); err != nil {
			return fmt.Errorf("its schema must be created or upgraded: %w", err)
		}
	}
	for _, stmt := range plan {
		if err := p.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%q: %w", stmt, err)
		}
	}
	return nil
}

// catalog runs the catalog read upgrade/file.
func catalog(ctx context.Context, p ApplyParams, file string, row func(a, b string)) error {
	q, err := fs.ReadFile(p.Files, "upgrade/"+file)
	if err != nil {
		return err
	}
	if err := p.Query(ctx, string(q), row); err != nil {
		return fmt.Errorf("catalog %s: %w", file, err)
	}
	return nil
}
