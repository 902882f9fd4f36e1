package cks_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cks-dev/cks"
)

// TestCheckStored: a stored task or object is checked field by field as a
// write would be today — a text past its length, a JSON value past its
// nesting — and a clean one has no problem; a long expectation is clipped
// at a rune boundary.
func TestCheckStored(t *testing.T) {
	deep := json.RawMessage(strings.Repeat("[", 70) + strings.Repeat("]", 70))
	clean := cks.Task{ID: 1, Type: "t", Title: "ok", Payload: json.RawMessage(`{}`), Metadata: json.RawMessage(`{}`)}
	if got := cks.CheckStoredTask(clean); len(got) != 0 {
		t.Errorf("a clean task: %+v", got)
	}
	old := clean
	old.Title, old.Payload = strings.Repeat("é", cks.MaxTitleLen), deep
	got := cks.CheckStoredTask(old)
	if len(got) != 2 || got[0].Field != "title" || got[1].Field != "payload" || got[0].ID != 1 || got[0].Kind != "task" {
		t.Errorf("a long title and a deep payload: %+v", got)
	}
	obj := cks.CheckStoredObject(cks.Object{ID: 7, Kind: "claim", Content: deep})
	if len(obj) != 1 || obj[0].Field != "content" || obj[0].Kind != "object" || obj[0].ID != 7 {
		t.Errorf("a deep object: %+v", obj)
	}
	bad := cks.CheckStoredTask(cks.Task{ID: 2, Type: "t", Payload: json.RawMessage(`["` + strings.Repeat("é", 300) + "\xff" + `"]`),
		Metadata: json.RawMessage(`{}`)})
	if len(bad) != 1 || !utf8.ValidString(bad[0].Problem) || len(bad[0].Problem) > 210 {
		t.Errorf("a clipped problem: %+v", bad)
	}
}
