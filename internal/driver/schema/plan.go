package schema

import (
	"errors"
	"io/fs"
	"path"
	"strings"
)

// Existing is what a database holds of the schema, as its driver read it
// from the catalog (PRAGMA table_info and sqlite_master on SQLite,
// information_schema and pg_catalog on Postgres).
type Existing struct {
	// Columns maps each existing table to the set of its columns; a table
	// absent from it does not exist.
	Columns map[string]map[string]bool
	// Indexes and Triggers are the names of the existing ones.
	Indexes  map[string]bool
	Triggers map[string]bool
	// References maps "table.column" of each existing single-column
	// foreign key to its constraint's name (Postgres; SQLite's have none,
	// and the value is the referenced table).
	References map[string]string
	// PrimaryKeys maps each existing table with a primary key to its
	// columns, in key order, joined by commas.
	PrimaryKeys map[string]string
	// Options maps each existing table with storage parameters to them,
	// as the catalog spells each ("fillfactor=70"; Postgres only).
	Options map[string]map[string]bool
}

// Backfill maps "table.column" to the statements that fill that column in
// the rows an older database already holds. They run once every missing
// column is added and every retired column is retired, and only for the
// columns that were added. Each driver supplies its own (they are SQL of its
// dialect).
type Backfill map[string][]string

// Upgrade is what a driver hands Plan besides what its database has: the
// backfills of added columns, and the Retire statements of retired columns,
// by "table.column", which carry what a retired column held into its
// replacement before it is dropped.
type Upgrade struct {
	Backfill Backfill
	Retire   map[string][]string
}

// Plan returns the statements that bring a database holding have to the
// current shape in dialect d, in order: CREATE TABLE of every missing table
// (all of them before any backfill, which may write to another table); for
// every existing table an ADD COLUMN per missing column; for every retired
// column it still has, its Retire statements, DROP INDEX of the indexes on
// it and DROP COLUMN; DROP INDEX of every retired index it has; the drop of
// every retired foreign key it has (Postgres: DROP CONSTRAINT; SQLite: the
// table rebuilt, see rebuildSQL); the new primary key of a table whose key is
// its retired one (Postgres: the old constraint dropped, the new one added;
// SQLite: the table rebuilt); the backfills of the added columns; then
// every missing index and trigger. An append-only table whose columns
// change loses its triggers first and gets them again at the end. A
// database of the current shape needs none. The statements are meant to
// run in one transaction.
func Plan(d Dialect, have Existing, up Upgrade) []string {
	var out []string
	tables := TablesOf(d)
	for _, t := range tables {
		if _, ok := have.Columns[t.Name]; !ok {
			out = append(out, CreateSQL(t, d))
		}
	}
	// An append-only table that gains or loses a column loses its triggers
	// first: they name the columns they freeze, and a backfill may have to
	// write the rows they guard. They are created again with the indexes,
	// after every backfill.
	dropped := map[string]bool{}
	var fills []string
	for _, t := range tables {
		cols, ok := have.Columns[t.Name]
		if !ok {
			continue
		}
		changes := false
		for _, c := range t.Columns {
			changes = changes || !cols[c.Name]
		}
		for _, r := range t.Retired {
			changes = changes || cols[r.Column]
		}
		if changes {
			for _, tr := range Triggers(t, d) {
				if have.Triggers[tr.Name] {
					out = append(out, DropTriggerSQL(t, tr, d))
					dropped[tr.Name] = true
				}
			}
		}
		for _, c := range t.Columns {
			if cols[c.Name] {
				continue
			}
			out = append(out, AddColumnSQL(t, c, d))
			fills = append(fills, up.Backfill[t.Name+"."+c.Name]...)
		}
	}
	for _, t := range tables {
		for _, r := range t.Retired {
			if !have.Columns[t.Name][r.Column] {
				continue
			}
			out = append(out, up.Retire[t.Name+"."+r.Column]...)
			for _, ix := range r.Indexes {
				if (ix.Only == "" || ix.Only == d) && have.Indexes[ix.Name] {
					out = append(out, "DROP INDEX "+ix.Name)
				}
			}
			out = append(out, "ALTER TABLE "+t.Name+" DROP COLUMN "+r.Column)
		}
	}
	// Indexes gone with a rebuilt table, to be created again.
	gone := map[string]bool{}
	for _, t := range tables {
		if _, ok := have.Columns[t.Name]; !ok {
			continue
		}
		for _, ix := range t.RetiredIndexes {
			if (ix.Only == "" || ix.Only == d) && have.Indexes[ix.Name] {
				out = append(out, "DROP INDEX "+ix.Name)
			}
		}
		rebuild := false
		if retired := strings.Join(t.RetiredPrimaryKey, ","); retired != "" && t.primaryKeyIn(d) &&
			have.PrimaryKeys[t.Name] == retired {
			if d == Postgres {
				out = append(out, "ALTER TABLE "+t.Name+" DROP CONSTRAINT "+t.Name+"_pkey",
					"ALTER TABLE "+t.Name+" ADD PRIMARY KEY ("+strings.Join(t.PrimaryKey, ", ")+")")
			} else {
				rebuild = true
			}
		}
		for _, c := range t.RetiredReferences {
			name, ok := have.References[t.Name+"."+c]
			switch {
			case !ok:
			case d == Postgres:
				out = append(out, "ALTER TABLE "+t.Name+" DROP CONSTRAINT "+name)
			default:
				rebuild = true
			}
		}
		if rebuild {
			out = append(out, rebuildSQL(t, d)...)
			for _, ix := range t.Indexes {
				gone[ix.Name] = true
			}
			for _, tr := range Triggers(t, d) {
				dropped[tr.Name] = true
			}
		}
	}
	out = append(out, fills...)
	for _, t := range tables {
		if o := storageOption(t, d); o != "" && have.Columns[t.Name] != nil && !have.Options[t.Name][o] {
			// Pages written from now on keep the room; those already full
			// get it as their rows are pruned.
			out = append(out, "ALTER TABLE "+t.Name+" SET ("+o+")")
		}
	}
	function := false // the Postgres reject function, created once before its first trigger
	for _, t := range tables {
		for _, ix := range t.Indexes {
			if ix.In(d) && (!have.Indexes[ix.Name] || gone[ix.Name]) {
				out = append(out, IndexSQL(t, ix, d))
			}
		}
		for _, tr := range Triggers(t, d) {
			if have.Triggers[tr.Name] && !dropped[tr.Name] {
				continue
			}
			if d == Postgres && !function {
				out = append(out, rejectFunctionSQL)
				function = true
			}
			out = append(out, tr.SQL)
		}
	}
	return out
}

// rebuildSQL renders the statements that rebuild t (SQLite) in its current
// shape with the rows it holds, every current column of which it has by
// then: the old table renamed aside, the current one created under t's
// name, the rows copied, the old one dropped (its indexes and triggers,
// which the renamed table kept, go with it; Plan creates t's again). This is
// how SQLite drops a constraint (its ALTER TABLE cannot). The old table goes
// aside first so that the new one's stored CREATE TABLE names it plainly.
func rebuildSQL(t Table, d Dialect) []string {
	aside := t.Name + "__rebuilt"
	cols := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		cols[i] = c.Name
	}
	list := strings.Join(cols, ", ")
	return []string{
		"ALTER TABLE " + t.Name + " RENAME TO " + aside,
		CreateSQL(t, d),
		"INSERT INTO " + t.Name + " (" + list + ") SELECT " + list + " FROM " + aside,
		"DROP TABLE " + aside,
	}
}

// Fresh returns the DDL of an empty database in d: what Plan returns for a
// database without any of the tables.
func Fresh(d Dialect) []string { return Plan(d, Existing{}, Upgrade{}) }

// Script joins statements into one SQL script, each ended by a semicolon.
func Script(statements []string) string {
	var out string
	for _, s := range statements {
		out += s + ";\n\n"
	}
	return out
}

// ReadUpgrade reads a driver's Upgrade from fsys: every
// upgrade/backfill/TABLE.COLUMN.sql and upgrade/retire/TABLE.COLUMN.sql file,
// each one statement, keyed by "TABLE.COLUMN". A missing directory is none.
func ReadUpgrade(fsys fs.FS) (Upgrade, error) {
	up := Upgrade{Backfill: Backfill{}, Retire: map[string][]string{}}
	for dir, into := range map[string]map[string][]string{"upgrade/backfill": up.Backfill, "upgrade/retire": up.Retire} {
		files, err := fs.ReadDir(fsys, dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return up, err
		}
		for _, f := range files {
			q, err := fs.ReadFile(fsys, path.Join(dir, f.Name()))
			if err != nil {
				return up, err
			}
			key := strings.TrimSuffix(f.Name(), ".sql")
			into[key] = append(into[key], string(q))
		}
	}
	return up, nil
}
