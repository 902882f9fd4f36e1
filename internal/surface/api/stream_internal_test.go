package api

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/cks-dev/cks"
)

// TestPagesStreamAsTheyEncode: a page written row by row is the JSON its
// own encoding is (but [] for no rows), with and without a next cursor.
func TestPagesStreamAsTheyEncode(t *testing.T) {
	for _, v := range []any{
		cks.TaskPage{Tasks: []cks.Task{{ID: 1, Type: "a<b", Payload: json.RawMessage(`{"x":[1,2]}`)}, {ID: 2, Title: "&"}}, Next: 2},
		cks.TaskPage{Tasks: []cks.Task{{ID: 3, Payload: json.RawMessage(`"s"`)}}},
		cks.ObjectPage{Objects: []cks.Object{{ID: 4, Kind: "claim", Content: json.RawMessage(`{}`)}}, Next: 4},
		cks.TaskPage{Tasks: []cks.Task{}},
		cks.TaskPage{Tasks: []cks.Task{{ID: 5, State: cks.TaskStopped}}, Next: 9, Stopped: new(1), MoreStopped: true},
		cks.TaskPage{Tasks: []cks.Task{}, Stopped: new(0)},
	} {
		rec := httptest.NewRecorder()
		writeAnswer(rec, 200, v, false)
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		var got, exp bytes.Buffer
		if err := json.Compact(&got, rec.Body.Bytes()); err != nil {
			t.Fatalf("%T streamed is not JSON: %v\n%s", v, err, rec.Body.Bytes())
		}
		json.Compact(&exp, want.Bytes()) //nolint:errcheck // encoded above
		if got.String() != exp.String() {
			t.Errorf("%T streamed as\n%s\nwant\n%s", v, got.String(), exp.String())
		}
	}
}
