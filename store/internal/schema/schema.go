// Package schema describes the tables of a store backend and computes the DDL
// that creates or upgrades them, following the seeds' convention: CREATE TABLE
// IF NOT EXISTS from one column list, then ALTER TABLE ADD COLUMN for every
// column an older database lacks; no migration runner, no version table. Each
// backend supplies its own column types and runs the statements.
package schema

import (
	"strconv"
	"strings"
)

// Column is one column of a table. A column added after a table's first
// release must be addable by ALTER TABLE ADD COLUMN: nullable or with a default.
type Column struct {
	Name string
	Def  string
}

// Table is the current shape of one table.
type Table struct {
	Name        string
	Columns     []Column
	Constraints []string
	// Backfill maps a column to the statement that fills it in the rows an
	// older database already holds; it runs only when that column is added.
	Backfill map[string]string
	// After holds statements run once the table has its full shape (indexes,
	// triggers), each idempotent.
	After []string
}

// Create returns the CREATE TABLE IF NOT EXISTS statement of the full shape.
func (t Table) Create() string {
	parts := make([]string, 0, len(t.Columns)+len(t.Constraints))
	for _, c := range t.Columns {
		parts = append(parts, c.Name+" "+c.Def)
	}
	parts = append(parts, t.Constraints...)
	return "CREATE TABLE IF NOT EXISTS " + t.Name + " (\n    " + strings.Join(parts, ",\n    ") + "\n)"
}

// Upgrade returns, for a table that exists with the columns in have, the
// statements that bring it to the current shape: an ADD COLUMN (and its
// backfill) for each missing column, then the After statements.
func (t Table) Upgrade(have map[string]bool) []string {
	var out []string
	for _, c := range t.Columns {
		if have[c.Name] {
			continue
		}
		out = append(out, "ALTER TABLE "+t.Name+" ADD COLUMN "+c.Name+" "+c.Def)
		if fill := t.Backfill[c.Name]; fill != "" {
			out = append(out, fill)
		}
	}
	return append(out, t.After...)
}

// ClaimPrincipal reads the name "task/ID WORKER" that the credentials of
// HTTP claims got before they were bound to their lease (auth.IssueTaskToken
// named them so, and the lease reaper found them by it). The backends bind
// such principals when they upgrade a database. An operator's credential
// for a task ("task/ID", no worker) is not one.
func ClaimPrincipal(name string) (taskID int64, worker string, ok bool) {
	rest, found := strings.CutPrefix(name, "task/")
	if !found {
		return 0, "", false
	}
	idText, worker, _ := strings.Cut(rest, " ")
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != idText || worker == "" {
		return 0, "", false
	}
	return id, worker, true
}
