package postgres

import (
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/cks-dev/cks/ledger"
)

// TestDispatchExclusionSet asserts that every claim, reclaim and dependency
// release query excludes exactly ledger.DispatchExcluded (ADR 0020: the sets
// must stay identical).
func TestDispatchExclusionSet(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	queries := map[string]string{
		"claim":       claimSQL(&args{}, now, nil),
		"claim typed": claimSQL(&args{}, now, []string{"a", "b"}),
		"reclaim":     reclaimSQL(&args{}, now, time.Minute),
		// ReleaseDependencies (the dependency_release sweeper).
		"release":           releaseSQL(&args{}),
		"dead dependencies": deadDepsSQL(&args{}),
	}
	want := ledger.DispatchExcluded[:]
	notIn := regexp.MustCompile(`state NOT IN \(([^)]*)\)`)
	quoted := regexp.MustCompile(`'([A-Z_]+)'`)
	for name, q := range queries {
		m := notIn.FindAllStringSubmatch(q, -1)
		if len(m) != 1 {
			t.Errorf("%s query has %d NOT IN clauses, want 1: %s", name, len(m), q)
			continue
		}
		var got []ledger.State
		for _, s := range quoted.FindAllStringSubmatch(m[0][1], -1) {
			got = append(got, ledger.State(s[1]))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s query excludes %v, want ledger.DispatchExcluded %v", name, got, want)
		}
	}
}
