package schema

import (
	"slices"
	"testing"
)

func TestUpgrade(t *testing.T) {
	tb := Table{
		Name:     "t",
		Columns:  []Column{{Name: "id", Def: "INTEGER PRIMARY KEY"}, {Name: "a", Def: "TEXT"}, {Name: "b", Def: "TEXT"}},
		Backfill: map[string]string{"b": "UPDATE t SET b = a"},
		After:    []string{"CREATE INDEX IF NOT EXISTS t_b ON t(b)"},
	}
	cases := []struct {
		name string
		have map[string]bool
		want []string
	}{
		{"current", map[string]bool{"id": true, "a": true, "b": true}, []string{"CREATE INDEX IF NOT EXISTS t_b ON t(b)"}},
		{"missing b", map[string]bool{"id": true, "a": true}, []string{
			"ALTER TABLE t ADD COLUMN b TEXT", "UPDATE t SET b = a", "CREATE INDEX IF NOT EXISTS t_b ON t(b)"}},
		{"missing a and b", map[string]bool{"id": true}, []string{
			"ALTER TABLE t ADD COLUMN a TEXT", "ALTER TABLE t ADD COLUMN b TEXT", "UPDATE t SET b = a",
			"CREATE INDEX IF NOT EXISTS t_b ON t(b)"}},
	}
	for _, c := range cases {
		if got := tb.Upgrade(c.have); !slices.Equal(got, c.want) {
			t.Errorf("%s: Upgrade = %q, want %q", c.name, got, c.want)
		}
	}
	if got, want := tb.Create(), "CREATE TABLE IF NOT EXISTS t (\n    id INTEGER PRIMARY KEY,\n    a TEXT,\n    b TEXT\n)"; got != want {
		t.Errorf("Create = %q, want %q", got, want)
	}
}
