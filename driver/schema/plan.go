package schema

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
}

// Backfill maps "table.column" to the statements that fill that column in
// the rows an older database already holds. They run right after the
// column is added, and only then. Each driver supplies its own (they are
// SQL of its dialect).
type Backfill map[string][]string

// Plan returns the statements that bring a database holding have to the
// current shape in dialect d, in order: CREATE TABLE of every missing table
// (all of them before any backfill, which may write to another table), then
// for every existing table an ADD COLUMN per missing column, each followed
// by its backfill (an append-only table's triggers dropped before its first
// one), then every missing index and trigger. A database of the
// current shape needs none. The statements are meant to run in one
// transaction.
func Plan(d Dialect, have Existing, fill Backfill) []string {
	var out []string
	tables := TablesOf(d)
	for _, t := range tables {
		if _, ok := have.Columns[t.Name]; !ok {
			out = append(out, CreateSQL(t, d))
		}
	}
	// An append-only table that gains a column loses its triggers first:
	// they name the columns they freeze (the new one is not among them), and
	// a backfill may have to write the rows they guard. They are created
	// again with the indexes, after every backfill.
	dropped := map[string]bool{}
	for _, t := range tables {
		cols, ok := have.Columns[t.Name]
		if !ok {
			continue
		}
		grows := false
		for _, c := range t.Columns {
			grows = grows || !cols[c.Name]
		}
		if grows {
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
			out = append(out, fill[t.Name+"."+c.Name]...)
		}
	}
	function := false // the Postgres reject function, created once before its first trigger
	for _, t := range tables {
		for _, ix := range t.Indexes {
			if ix.In(d) && !have.Indexes[ix.Name] {
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

// Fresh returns the DDL of an empty database in d: what Plan returns for a
// database without any of the tables.
func Fresh(d Dialect) []string { return Plan(d, Existing{}, nil) }

// Script joins statements into one SQL script, each ended by a semicolon.
func Script(statements []string) string {
	var out string
	for _, s := range statements {
		out += s + ";\n\n"
	}
	return out
}
