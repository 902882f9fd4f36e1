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

func TestClaimPrincipal(t *testing.T) {
	cases := []struct {
		name   string
		id     int64
		worker string
		ok     bool
	}{
		{"task/12 w1", 12, "w1", true},
		{"task/12 agent exec@host", 12, "agent exec@host", true},
		{"task/12", 0, "", false}, // an operator's cks token create --task
		{"task/12 ", 0, "", false},
		{"task/012 w", 0, "", false},
		{"task/0 w", 0, "", false},
		{"task/x w", 0, "", false},
		{"ops", 0, "", false},
	}
	for _, c := range cases {
		id, worker, ok := ClaimPrincipal(c.name)
		if id != c.id || worker != c.worker || ok != c.ok {
			t.Errorf("ClaimPrincipal(%q) = %d, %q, %v; want %d, %q, %v", c.name, id, worker, ok, c.id, c.worker, c.ok)
		}
	}
}
