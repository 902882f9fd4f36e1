package main

// The Go side of the queries: the Go type of each SQL type in each
// dialect, and the Go names of tables, columns and parameters.

import (
	"strings"

	"github.com/cks-dev/cks/internal/driver/schema"
)

// goType is t's Go type in dialect d. Postgres: NULL-able values are
// pointers, but a NULL-able time is a pgtype.Timestamptz (a value: a
// *time.Time made pgx allocate one per non-NULL column of every row read,
// through reflection); JSON is its text as bytes. SQLite: times and JSON
// are the TEXT they are stored as, mapped by the driver's glue.
func goType(d schema.Dialect, t sqlType) string {
	var base string
	pg := d == schema.Postgres
	switch t.base {
	case schema.ID, schema.Identity, schema.BigInt:
		base = "int64"
	case schema.Int:
		base = "int64"
		if pg {
			base = "int32"
		}
	case schema.Text:
		base = "string"
	case schema.JSON:
		base = "string"
		if pg {
			base = "[]byte"
		}
	case schema.Time:
		base = "string"
		if pg {
			base = "time.Time"
		}
	case schema.Bool:
		base = "bool"
	case schema.BoolInt:
		base = "int64"
		if pg {
			base = "bool"
		}
	case schema.Float:
		base = "float64"
	case schema.BigIntArray:
		base = "string"
		if pg {
			base = "[]int64"
		}
	}
	if t.array {
		return "[]" + base
	}
	if !t.nullable || base == "[]byte" || strings.HasPrefix(base, "[]") {
		return base
	}
	if pg && base == "time.Time" {
		return "pgtype.Timestamptz"
	}
	return "*" + base
}

// goName is the exported Go name of a snake_case SQL name: each word
// capitalised, "id" as "ID", and the renames below.
func goName(sql string) string {
	if r, ok := renames[sql]; ok {
		return r
	}
	var b strings.Builder
	for _, w := range strings.Split(sql, "_") {
		if w == "" {
			continue
		}
		if w == "id" {
			b.WriteString("ID")
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
}

// renames are the Go names that are not goName's rule.
var renames = map[string]string{"ids": "IDs", "principal_ids": "PrincipalIDs"}

// argName is the unexported Go name of a parameter passed alone: its first
// word as it is, the others as goName writes them (task_id: taskID).
func argName(sql string) string {
	first, rest, _ := strings.Cut(sql, "_")
	return first + goName(rest)
}

// modelName is the Go name of a table's row: the name in the singular.
func modelName(table string) string {
	n := goName(table)
	switch {
	case strings.HasSuffix(n, "sses"), strings.HasSuffix(n, "ses") && !strings.HasSuffix(n, "uses"):
		if strings.HasSuffix(n, "sses") {
			return strings.TrimSuffix(n, "es")
		}
		return strings.TrimSuffix(n, "s")
	case strings.HasSuffix(n, "ss"), strings.HasSuffix(n, "ness"):
		return n
	case strings.HasSuffix(n, "s"):
		return strings.TrimSuffix(n, "s")
	}
	return n
}
