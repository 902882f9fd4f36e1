package ops_test

import (
	"net/url"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
)

// TestListProcessesQuery: list_processes' filters read from a query, as
// GET /v1/processes takes them (alive, an optional boolean, set only when
// given), and written back into one by the client.
func TestListProcessesQuery(t *testing.T) {
	for q, want := range map[string]cks.ListProcessesInput{
		"": {},
		"alive=false&history=true&kind=exec&kind=critic": {Alive: new(false), History: true, Kind: cks.Names{"exec", "critic"}},
		"alive=true&cursor=12.x&limit=5":                 {Alive: new(true), Cursor: "12.x", Limit: 5},
	} {
		v, err := url.ParseQuery(q)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ops.HTTPInput(ops.ListProcesses, func(string) string { return "" }, v, nil)
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		in := got.(*cks.ListProcessesInput)
		if (in.Alive == nil) != (want.Alive == nil) || in.Alive != nil && *in.Alive != *want.Alive ||
			in.History != want.History || len(in.Kind) != len(want.Kind) || in.Cursor != want.Cursor || in.Limit != want.Limit {
			t.Errorf("%q read as %+v, want %+v", q, in, want)
		}
		_, path, _, err := ops.HTTPRequest(ops.ListProcesses, in)
		if err != nil {
			t.Fatal(err)
		}
		if u, _ := url.Parse(path); u.Query().Encode() != v.Encode() {
			t.Errorf("%q written back as %q", q, u.RawQuery)
		}
	}
	if _, err := ops.HTTPInput(ops.ListProcesses, func(string) string { return "" }, url.Values{"alive": {"maybe"}}, nil); !cks.IsFieldError(err, "alive") {
		t.Errorf("alive=maybe: %v, want a field error naming alive", err)
	}
}
