package studio_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestTaskPageEditHistory: on both backends, the task page's edit history
// shows each edit of the criteria and the description as a line diff
// (kept, removed and added lines), with who and when, newest first; a live
// edit (priority) adds none, and a task never edited says so.
func TestTaskPageEditHistory(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend.Backend) {
		h := taskStudio(b)
		ctx := context.Background()
		task, _, err := b.Tasks.Enqueue(ctx, cks.NewTask{Type: "build", Title: "edited",
			AcceptanceCriteria: "tests pass\nlint clean\ndocs updated", Description: "first"})
		if err != nil {
			t.Fatal(err)
		}
		page := fmt.Sprintf("/tasks/%d", task.ID)
		r := get(t, h, page)
		wantHTML(t, r, http.StatusOK)
		mustContain(t, "unedited", r.body, "The description and criteria were never edited.")

		for _, p := range []struct {
			actor string
			patch cks.TaskPatch
		}{
			{"alice", cks.TaskPatch{AcceptanceCriteria: new("tests pass\nbenchmarks hold\ndocs updated")}},
			{"bob", cks.TaskPatch{Priority: new(7)}},
			{"bob", cks.TaskPatch{Description: new("second")}},
		} {
			if _, err := b.Tasks.UpdateTask(ctx, ledger.UpdateParams{ID: task.ID, Actor: p.actor, Patch: p.patch}); err != nil {
				t.Fatal(err)
			}
		}
		r = get(t, h, page)
		wantHTML(t, r, http.StatusOK)
		mustContain(t, "history", r.body,
			`<strong>Description</strong> changed by bob`,
			`<span class="diff__del">- first</span><span class="diff__add">&#43; second</span>`,
			`<strong>Acceptance criteria</strong> changed by alice`,
			`<span class="diff__same">  tests pass</span><span class="diff__del">- lint clean</span><span class="diff__add">&#43; benchmarks hold</span><span class="diff__same">  docs updated</span>`)
		mustNotContain(t, "history", r.body, "never edited")
		if n := strings.Count(r.body, "data-revision"); n != 2 {
			t.Errorf("%d revisions, want 2 (the priority edit is none)", n)
		}
		if i, j := strings.Index(r.body, "<strong>Description</strong>"), strings.Index(r.body, "<strong>Acceptance criteria</strong>"); i > j {
			t.Error("the newest edit is not first")
		}
	})
}
