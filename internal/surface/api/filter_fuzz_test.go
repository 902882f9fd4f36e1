package api_test

import (
	"errors"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/surface/api"
)

// checkFilterError asserts err is a FieldError naming one of fields.
func checkFilterError(t *testing.T, query string, err error, fields ...string) {
	t.Helper()
	var fe *cks.FieldError
	if !errors.As(err, &fe) || !slices.Contains(fields, fe.Field) || !errors.Is(err, cks.ErrInvalid) {
		t.Fatalf("query %q: error %v (%T), want a FieldError naming one of %v", query, err, err, fields)
	}
}

// checkList asserts a parsed list of states or types is what splitting the
// parameter on commas gives: trimmed, non-empty, no commas.
func checkList(t *testing.T, query, name string, got []string) {
	t.Helper()
	for _, s := range got {
		if s == "" || s != strings.TrimSpace(s) || strings.Contains(s, ",") {
			t.Fatalf("query %q: %s %q is not a trimmed, non-empty item of the list", query, name, s)
		}
	}
}

// FuzzParseTaskFilter: any query either parses into a filter the store
// accepts (limit in 1..MaxListLimit, cursor ≥ 0, known states, list items
// trimmed) that the same query re-encoded parses to again, or is refused with
// a FieldError naming the parameter (a parameter that is no field of
// list_tasks is refused naming itself).
func FuzzParseTaskFilter(f *testing.F) {
	for _, q := range []string{"", "state=open", "state=OPEN,running&state=stopped", "type=a,%20b,,c", "cursor=7&limit=1000",
		"limit=0", "limit=1001", "cursor=-1", "limit=9223372036854775808", "stopped_longer_than=24h", "stopped_longer_than=-1s",
		"stopped_longer_than=1h&state=", "stopped_longer_than=2562048h", "state=%00", "type=%ff", "state=open;type=x"} {
		f.Add(q)
	}
	now := backendtest.T0
	f.Fuzz(func(t *testing.T, query string) {
		q, _ := url.ParseQuery(query) // as r.URL.Query(): bad pairs are dropped
		got, err := api.ParseTaskFilter(q, now)
		if err != nil {
			checkFilterError(t, query, err, slices.Concat([]string{"state", "type", "cursor", "limit", "stopped_longer_than"}, slices.Collect(maps.Keys(q)))...)
			return
		}
		if got.Limit < 1 || got.Limit > cks.MaxListLimit || got.After < 0 {
			t.Fatalf("query %q: limit %d, cursor %d out of range", query, got.Limit, got.After)
		}
		states := make([]string, len(got.States))
		for i, s := range got.States {
			if !ledger.Valid(s) {
				t.Fatalf("query %q: unknown state %q accepted", query, s)
			}
			states[i] = string(s)
		}
		checkList(t, query, "type", got.Types)
		if q.Get("stopped_longer_than") != "" {
			d, _ := time.ParseDuration(q.Get("stopped_longer_than"))
			if !slices.Equal(got.States, []cks.TaskState{cks.TaskStopped}) || !got.StateChangedBefore.Equal(now.Add(-d)) {
				t.Fatalf("query %q: states %v changed before %v, want STOPPED before now-%v", query, got.States, got.StateChangedBefore, d)
			}
			return
		}
		// Round trip: the filter written back as a query parses to itself.
		back := url.Values{"limit": {strconv.Itoa(got.Limit)}, "cursor": {strconv.FormatInt(got.After, 10)}}
		if len(states) > 0 {
			back["state"] = []string{strings.Join(states, ",")}
		}
		if len(got.Types) > 0 {
			back["type"] = got.Types
		}
		again, err := api.ParseTaskFilter(back, now)
		if err != nil || !slices.Equal(again.States, got.States) || !slices.Equal(again.Types, got.Types) ||
			again.After != got.After || again.Limit != got.Limit {
			t.Fatalf("query %q → %+v; written back as %q → %+v, %v", query, got, back.Encode(), again, err)
		}
	})
}

// FuzzParseObjectFilter: as FuzzParseTaskFilter, for GET /v1/objects.
func FuzzParseObjectFilter(f *testing.F) {
	for _, q := range []string{"", "status=a,b&kind=question", "cursor=1&limit=2", "limit=-1", "cursor=x", "kind=%00,%ff"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, query string) {
		q, _ := url.ParseQuery(query)
		got, err := api.ParseObjectFilter(q)
		if err != nil {
			checkFilterError(t, query, err, slices.Concat([]string{"status", "kind", "cursor", "limit"}, slices.Collect(maps.Keys(q)))...)
			return
		}
		if got.Limit < 1 || got.Limit > cks.MaxListLimit || got.After < 0 {
			t.Fatalf("query %q: limit %d, cursor %d out of range", query, got.Limit, got.After)
		}
		checkList(t, query, "status", got.Statuses)
		checkList(t, query, "kind", got.Kinds)
	})
}
