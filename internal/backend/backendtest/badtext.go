package backendtest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
)

// BadTexts are strings no backend may store: Postgres refuses a NUL byte
// and invalid UTF-8 in TEXT (SQLite would store them), so the store refuses
// them on both before anything is written; and text longer than any
// field's limit (cks.MaxTextLen).
var BadTexts = []string{"nul\x00byte", "bad\xffutf8", "cut\xc3", "surrogate\xed\xa0\x80", TooLongText}

// TooLongText is longer than the limit of every text field.
var TooLongText = strings.Repeat("x", cks.MaxLongTextLen+1)

// BadJSON are JSON objects json.Valid accepts that no backend may store:
// Postgres jsonb refuses a \u0000 escape (in a value or a key), an unpaired
// surrogate escape and a number beyond numeric's range, and Postgres text
// raw invalid UTF-8.
var BadJSON = []string{
	`{"a":"\u0000"}`,
	`{"\u0000":1}`,
	`{"a":["x","y\u0000z"]}`,
	"{\"a\":\"\xff\"}",
	`{"a":"\ud800"}`,
	`{"a":"\udc00\ud800"}`,
	`{"a":1e131072}`,
	`{"a":1e-16384}`,
	// Past the bounds of every stored value: nesting, growth, size.
	`{"a":` + strings.Repeat("[", cks.MaxJSONDepth) + strings.Repeat("]", cks.MaxJSONDepth) + `}`,
	`{"a":` + strings.Repeat("[", 9000) + strings.Repeat("]", 9000) + `}`,
	`{"a":1e400}`,
	`{"a":"` + strings.Repeat("x", cks.MaxJSONBytes) + `"}`,
}

// saysExpected reports whether err, refusing one of BadTexts or BadJSON,
// says what is expected: text or JSON in UTF-8, a number a numeric holds,
// or the bound the value is past.
func saysExpected(err error) bool {
	for _, w := range []string{"UTF-8", "numeric", "bytes of text", cks.ExpectedJSONDepth, cks.ExpectedJSONNumberGrowth,
		cks.ExpectedJSONSize, "bytes of JSON"} {
		if strings.Contains(err.Error(), w) {
			return true
		}
	}
	return false
}

// BadInput is one argument of one store operation, and the operation
// called with a bad value in that argument (and good values in the rest).
type BadInput struct {
	Op, Field string
	// JSON marks a JSON argument: Call gets each of BadJSON instead of
	// each of BadTexts.
	JSON bool
	Call func(v string) error
}

// State is everything a refused call must leave as it was, by record:
// every task with its events, evidence, decisions and aborts; every object
// with its log, edges and versions; the forks and edges; principals with
// their grants; the schedules; liveness rows; the sweeper overrides of
// sweepers.
func State(t testing.TB, s *backend.Backend, sweepers ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for cursor := int64(0); ; {
		page, err := s.Tasks.ListTasks(Ctx(t), cks.TaskFilter{After: cursor, Limit: cks.MaxListLimit})
		if err != nil {
			t.Fatalf("ListTasks: %v", err)
		}
		for _, task := range page.Tasks {
			out[fmt.Sprint("task ", task.ID)] = AsJSON(t, MustGet(t, s, task.ID))
		}
		if page.Next == 0 {
			break
		}
		cursor = page.Next
	}
	for id, o := range ObjectSnapshot(t, s.Objects) {
		out[fmt.Sprint("object ", id)] = o
	}
	for id, v := range VersionSnapshot(t, s.Objects, s.Objects) {
		out[fmt.Sprint("versions of ", id)] = v
	}
	out["forks"] = AsJSON(t, MustForks(t, s.Objects, 0, cks.MaxListLimit))
	edges, err := s.Objects.ListEdges(Ctx(t), 0, cks.MaxListLimit)
	if err != nil {
		t.Fatalf("ListEdges: %v", err)
	}
	out["edges"] = AsJSON(t, edges)
	schedules, err := s.Schedules.List(Ctx(t))
	if err != nil {
		t.Fatalf("list schedules: %v", err)
	}
	out["schedules"] = AsJSON(t, schedules)
	ps, err := s.Principals.ListPrincipals(Ctx(t))
	if err != nil {
		t.Fatalf("ListPrincipals: %v", err)
	}
	out["principals"] = AsJSON(t, ps)
	ls, err := s.Liveness.ListAgentLiveness(Ctx(t))
	if err != nil {
		t.Fatalf("ListAgentLiveness: %v", err)
	}
	out["liveness"] = AsJSON(t, ls)
	for _, id := range sweepers {
		o, err := s.Sweepers.GetSweeperDesiredRunning(Ctx(t), id)
		if err != nil {
			t.Fatalf("GetSweeperDesiredRunning(%s): %v", id, err)
		}
		out["sweeper "+id] = AsJSON(t, o)
	}
	return out
}

// DiffState reports (as test errors of what) every record that differs
// between two States.
func DiffState(t testing.TB, what string, before, after map[string]string) {
	t.Helper()
	var keys []string
	for k := range before {
		keys = append(keys, k)
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if before[k] != after[k] {
			t.Errorf("%s changed %s:\n was %s\n now %s", what, k, before[k], after[k])
		}
	}
}

// CheckBadWrites calls every case with every bad value and fails the test
// unless each is refused with a FieldError naming the case's field that
// says what text is expected, and state (read before and after each case)
// did not change.
func CheckBadWrites(t *testing.T, cases []BadInput, state func() map[string]string) {
	t.Helper()
	before := state()
	for _, bc := range cases {
		values := BadTexts
		if bc.JSON {
			values = BadJSON
		}
		for _, v := range values {
			err := bc.Call(v)
			var fe *cks.FieldError
			if !errors.Is(err, cks.ErrInvalid) || !errors.As(err, &fe) || fe.Field != bc.Field {
				t.Errorf("%s with %s %.60q: err = %.200v, want a FieldError naming %s", bc.Op, bc.Field, v, err, bc.Field)
			} else if !saysExpected(err) {
				t.Errorf("%s with %s %.60q: error %.200q does not say what text is expected", bc.Op, bc.Field, v, err)
			}
		}
		after := state()
		DiffState(t, bc.Op+" with a bad "+bc.Field, before, after)
		before = after // report each write once
	}
}

// CheckBadReads fails the test unless every read refuses every bad text
// with a FieldError naming its field.
func CheckBadReads(t *testing.T, reads []BadInput) {
	t.Helper()
	for _, r := range reads {
		for _, v := range BadTexts {
			if err := r.Call(v); !cks.IsFieldError(err, r.Field) || !errors.Is(err, cks.ErrInvalid) {
				t.Errorf("%s with %s %.60q: err = %.200v, want a FieldError naming %s", r.Op, r.Field, v, err, r.Field)
			}
		}
	}
}
