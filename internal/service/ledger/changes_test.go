package ledger_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// change is a FieldChange as the test writes it: its values as JSON text.
type change struct {
	field, old, new string
	cut             int
}

// changesAre fails the test unless got are want, each value compared as
// JSON (a database may store JSON in its own form).
func changesAre(t testing.TB, what string, got []cks.FieldChange, want []change) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d changes %+v, want %d %+v", what, len(got), got, len(want), want)
	}
	for i, w := range want {
		g := got[i]
		if g.Field != w.field || !sameJSON(g.Old, w.old) || !sameJSON(g.New, w.new) || g.OldCut != w.cut {
			t.Errorf("%s: change %d = {%s old %s new %s cut %d}, want {%s old %s new %s cut %d}", what, i,
				g.Field, g.Old, g.New, g.OldCut, w.field, w.old, w.new, w.cut)
		}
	}
}

// sameJSON reports whether a and b are the same JSON value ("" for none).
func sameJSON(a json.RawMessage, b string) bool {
	if len(a) == 0 || b == "" {
		return len(a) == 0 && b == ""
	}
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal([]byte(b), &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

// edited returns the one event of task id with changes, and fails the test
// unless there is exactly one and its reason starts with reason.
func edited(t testing.TB, s *ledger.Service, id int64, reason string) cks.TaskEvent {
	t.Helper()
	task, err := s.GetTask(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []cks.TaskEvent
	for _, e := range task.Events {
		if e.Changes != nil {
			out = append(out, e)
		}
	}
	if len(out) != 1 || !strings.HasPrefix(out[0].Reason, reason) {
		t.Fatalf("task %d: events with changes %+v, want one, %q…; all: %+v", id, out, reason, task.Events)
	}
	return out[0]
}

// TestUpdateKeepsOldAndNew: an update's event keeps each field it changed
// with its old and new value — in place, live and across the restart of a
// running task (on the start event) — and get_task answers them; a state
// change has none. Both backends.
func TestUpdateKeepsOldAndNew(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t).Tasks
		ctx := context.Background()
		dep, _, err := s.Enqueue(ctx, cks.NewTask{Type: "dep"})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name    string
			running bool
			patch   cks.TaskPatch
			reason  string // of the event with the changes
			want    []change
		}{
			{"in place", false, cks.TaskPatch{AcceptanceCriteria: new("tests pass"), Payload: json.RawMessage(`{"a":2}`),
				Priority: new(5), Metadata: json.RawMessage(`{"owner":"bo"}`), AddDependsOn: []int64{dep.ID}}, "update: ",
				[]change{{field: "acceptance_criteria", old: `"it works"`, new: `"tests pass"`}, {field: "payload", old: `{"a":1}`, new: `{"a":2}`},
					{field: "priority", old: `1`, new: `5`}, {field: "metadata", old: `{"owner":"al"}`, new: `{"owner":"bo"}`},
					{field: "add_depends_on", new: fmt.Sprintf("[%d]", dep.ID)}}},
			{"live", true, cks.TaskPatch{Title: new("renamed <b>")}, "update: title",
				[]change{{field: "title", old: `"t"`, new: `"renamed <b>"`}}},
			{"restart", true, cks.TaskPatch{Description: new("do it better"), AddChildren: []cks.NewTask{{Type: "child"}}},
				"restarted after update: ",
				[]change{{field: "description", old: `"do it"`, new: `"do it better"`}, {field: "add_children", new: "CHILDREN"}}},
		} {
			task, _, err := s.Enqueue(ctx, cks.NewTask{Type: "edit-" + strings.ReplaceAll(tc.name, " ", "-"), Title: "t", Description: "do it",
				AcceptanceCriteria: "it works", Payload: json.RawMessage(`{"a":1}`), Priority: 1, Metadata: json.RawMessage(`{"owner":"al"}`)})
			if err != nil {
				t.Fatal(err)
			}
			if tc.running {
				if got, err := s.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{task.Type}, N: 1, Lease: time.Minute}); err != nil || len(got) != 1 {
					t.Fatalf("%s: claim = %v, %v", tc.name, got, err)
				}
			}
			res, err := s.UpdateTask(ctx, ledger.UpdateParams{ID: task.ID, Actor: "op", Patch: tc.patch, Deadline: time.Second})
			if err != nil {
				t.Fatalf("%s: update: %v", tc.name, err)
			}
			for i := range tc.want {
				if tc.want[i].new == "CHILDREN" {
					tc.want[i].new = fmt.Sprintf("[%d]", res.Children[0].ID)
				}
			}
			ev := edited(t, s, task.ID, tc.reason)
			changesAre(t, tc.name, ev.Changes, tc.want)
			if tc.name == "restart" && (ev.From != cks.TaskStopped || ev.To != cks.TaskOpen) {
				t.Errorf("restart: the changes are on %s → %s, want the start's STOPPED → OPEN", ev.From, ev.To)
			}
		}
	})
}

// TestUpdateEventIsBounded: an event keeps at most max(new, MinOldKept)
// bytes of an old value — a text cut at a character boundary, a JSON value
// left out whole — and says how much it did not keep, so an edit that
// shrinks large fields makes an event about its own size, not theirs; old
// values within the bound are kept whole. Both backends.
func TestUpdateEventIsBounded(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t).Tasks
		ctx := context.Background()
		big := strings.Repeat("é", cks.MaxLongTextLen/2) // 2 bytes a character: a cut lands inside one
		bigPayload := json.RawMessage(`{"x":"` + strings.Repeat("y", 100<<10) + `"}`)
		task, _, err := s.Enqueue(ctx, cks.NewTask{Type: "bounded", Title: "t", Description: big,
			AcceptanceCriteria: strings.Repeat("c", 3000), Payload: bigPayload})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.UpdateTask(ctx, ledger.UpdateParams{ID: task.ID, Actor: "op", Patch: cks.TaskPatch{Description: new("short"), AcceptanceCriteria: new("c"),
			Payload: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
		ev := edited(t, s, task.ID, "update: ")
		kept := ledger.MinOldKept / 2 * 2 // whole characters
		changesAre(t, "shrinking edit", ev.Changes[:2], []change{
			{field: "description", old: `"` + big[:kept] + `"`, new: `"short"`, cut: len(big) - kept},
			{field: "acceptance_criteria", old: `"` + strings.Repeat("c", 3000) + `"`, new: `"c"`},
		})
		// The payload's size as stored is the database's own (jsonb spaces).
		if p := ev.Changes[2]; len(ev.Changes) != 3 || p.Field != "payload" || len(p.Old) != 0 || p.OldCut < 100<<10 || !sameJSON(p.New, `{}`) {
			t.Errorf("changes %+v; want the payload's old value left out, its size told", ev.Changes)
		}
		b, _ := json.Marshal(ev)
		if limit := 3*ledger.MinOldKept + 1<<10; len(b) > limit {
			t.Errorf("the event is %d bytes, want at most %d (the edit is a few bytes)", len(b), limit)
		}
	})
}
