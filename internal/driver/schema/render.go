package schema

import (
	"slices"
	"strconv"
	"strings"
)

// ColumnSQL renders column c's definition (everything after its name) in d.
func ColumnSQL(c Column, d Dialect) string {
	var b strings.Builder
	b.WriteString(c.Type.sql(d))
	if c.PrimaryKey {
		b.WriteString(" PRIMARY KEY")
	}
	if c.NotNull {
		b.WriteString(" NOT NULL")
	}
	if c.Unique {
		b.WriteString(" UNIQUE")
	}
	if lit := c.Default.in(d); lit != "" {
		b.WriteString(" DEFAULT " + lit)
	}
	if c.References != "" {
		b.WriteString(" REFERENCES " + c.References)
		if c.OnDeleteCascade {
			b.WriteString(" ON DELETE CASCADE")
		}
	}
	return b.String()
}

// CreateSQL renders CREATE TABLE IF NOT EXISTS of t's full shape in d.
func CreateSQL(t Table, d Dialect) string {
	parts := make([]string, 0, len(t.Columns)+1)
	for _, c := range t.Columns {
		parts = append(parts, c.Name+" "+ColumnSQL(c, d))
	}
	if len(t.PrimaryKey) > 0 && t.primaryKeyIn(d) {
		parts = append(parts, "PRIMARY KEY ("+strings.Join(t.PrimaryKey, ", ")+")")
	}
	return "CREATE TABLE IF NOT EXISTS " + t.Name + " (\n    " + strings.Join(parts, ",\n    ") + "\n)" + withSQL(t, d)
}

// withSQL renders the storage parameters of t in d (Postgres: WITH (…) of
// CREATE TABLE), "" when it has none.
func withSQL(t Table, d Dialect) string {
	if o := storageOption(t, d); o != "" {
		return " WITH (" + o + ")"
	}
	return ""
}

// storageOption is t's storage parameter in d as Postgres's catalog spells
// it in pg_class.reloptions ("fillfactor=70"), "" when it has none.
func storageOption(t Table, d Dialect) string {
	if d != Postgres || t.FillFactor == 0 {
		return ""
	}
	return "fillfactor=" + strconv.Itoa(t.FillFactor)
}

// AddColumnSQL renders the ALTER TABLE that adds column c to t in d.
func AddColumnSQL(t Table, c Column, d Dialect) string {
	return "ALTER TABLE " + t.Name + " ADD COLUMN " + c.Name + " " + ColumnSQL(c, d)
}

// IndexSQL renders CREATE INDEX IF NOT EXISTS of ix on t in d.
func IndexSQL(t Table, ix Index, d Dialect) string {
	keys := make([]string, len(ix.Keys))
	for i, k := range ix.Keys {
		keys[i] = k.Column
		if k.ByteOrder && d == Postgres {
			keys[i] += ` COLLATE "C"`
		}
		if k.Desc {
			keys[i] += " DESC"
		}
	}
	unique := ""
	if ix.Unique {
		unique = "UNIQUE "
	}
	using, with := "", ""
	if ix.BRIN && d == Postgres {
		// Each range summarized as it fills (autovacuum's work item), so
		// that a read of older ranges skips them without waiting for a
		// VACUUM; until then a range is read whole.
		using, with = " USING brin", " WITH (autosummarize = on)"
	}
	q := "CREATE " + unique + "INDEX IF NOT EXISTS " + ix.Name + " ON " + t.Name + using + "(" + strings.Join(keys, ", ") + ")" + with
	if ix.Where != "" {
		q += "\n\tWHERE " + ix.Where
	}
	return q
}

// Trigger is one trigger of the schema.
type Trigger struct {
	Name string
	SQL  string
}

// RejectFunction is the Postgres function every append-only trigger runs.
const RejectFunction = "cks_reject_change"

// rejectFunctionSQL creates RejectFunction (Postgres).
const rejectFunctionSQL = `CREATE OR REPLACE FUNCTION ` + RejectFunction + `() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP;
END $$`

// Triggers returns the triggers that make t append-only in d (none when t
// is not append-only): on SQLite one per refused operation, raising an
// ABORT; on Postgres one row trigger for UPDATE and DELETE and one
// statement trigger for TRUNCATE, both running RejectFunction.
func Triggers(t Table, d Dialect) []Trigger {
	if t.AppendOnly == nil {
		return nil
	}
	update, note := "UPDATE", ""
	if frozen := frozenColumns(t); frozen != nil {
		update = "UPDATE OF " + strings.Join(frozen, ", ")
		note = " (only " + strings.Join(t.AppendOnly.Mutable, ", ") + " changes)"
	}
	if d == Postgres {
		row, stmt := t.Name+"_no_change", t.Name+"_no_truncate"
		return []Trigger{
			{row, "CREATE TRIGGER " + row + " BEFORE " + update + " OR DELETE ON " + t.Name +
				" FOR EACH ROW EXECUTE FUNCTION " + RejectFunction + "()"},
			{stmt, "CREATE TRIGGER " + stmt + " BEFORE TRUNCATE ON " + t.Name +
				" FOR EACH STATEMENT EXECUTE FUNCTION " + RejectFunction + "()"},
		}
	}
	raise := func(op, note string) string {
		return "\nBEGIN SELECT RAISE(ABORT, '" + t.Name + " is append-only: " + op + " refused" + note + "'); END"
	}
	upd, del := t.Name+"_no_update", t.Name+"_no_delete"
	return []Trigger{
		{upd, "CREATE TRIGGER IF NOT EXISTS " + upd + " BEFORE " + update + " ON " + t.Name + raise("UPDATE", note)},
		{del, "CREATE TRIGGER IF NOT EXISTS " + del + " BEFORE DELETE ON " + t.Name + raise("DELETE", "")},
	}
}

// DropTriggerSQL renders the DROP TRIGGER of tr, a trigger of t, in d.
func DropTriggerSQL(t Table, tr Trigger, d Dialect) string {
	if d == Postgres {
		return "DROP TRIGGER IF EXISTS " + tr.Name + " ON " + t.Name
	}
	return "DROP TRIGGER IF EXISTS " + tr.Name
}

// frozenColumns returns the columns an UPDATE may not change when t has
// mutable ones (every column but those and the primary key), else nil:
// then no UPDATE at all is allowed.
func frozenColumns(t Table) []string {
	if len(t.AppendOnly.Mutable) == 0 {
		return nil
	}
	var out []string
	for _, c := range t.Columns {
		if c.Type != ID && c.Type != Identity && !c.PrimaryKey && !slices.Contains(t.AppendOnly.Mutable, c.Name) {
			out = append(out, c.Name)
		}
	}
	return out
}

// LiftAppendOnly returns the statements that drop the append-only
// triggers of the named tables in d and those that create them again:
// the retention sweeper's delete of old tasks (driver TaskPurge) runs
// between the two in one transaction, so no other transaction ever sees
// the tables without their triggers.
func LiftAppendOnly(d Dialect, tables ...string) (drop, restore []string) {
	for _, t := range Tables() {
		if !slices.Contains(tables, t.Name) {
			continue
		}
		for _, tr := range Triggers(t, d) {
			drop = append(drop, DropTriggerSQL(t, tr, d))
			restore = append(restore, tr.SQL)
		}
	}
	return drop, restore
}
