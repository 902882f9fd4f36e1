package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// TestDependencyOnUnreadableTaskIsMissing: a caller that may create or edit
// tasks but not read a task X gets, for depends_on [X] (create_task, a
// child of update_task) or add_depends_on [X] (update_task), the very
// refusal of an X that does not exist — same status, code and message but
// for the id — before anything is written, over HTTP and MCP: it cannot
// learn whether X exists, nor whether it is done (the new task's WAITING,
// OPEN or BLOCKED). With read on X the dependency is taken.
func TestDependencyOnUnreadableTaskIsMissing(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		f := newHubFixture(t, open)
		parent := f.enqueue(t)
		pending, cancelled := f.enqueue(t), f.enqueue(t)
		if _, err := f.store.Tasks.Cancel(context.Background(), cancelled.ID, "admin", "gone"); err != nil {
			t.Fatal(err)
		}
		const missing = 999999
		// A task-scoped credential of the parent: read, append, create on it.
		agent := f.tokenWith(t, auth.TaskTokenGrants(parent.ID)...)
		// Adding children needs create on the parent as well (issue 38).
		editor := f.tokenWith(t, cks.Grant{Resource: auth.TaskResource(parent.ID), Permission: auth.PermUpdate},
			cks.Grant{Resource: auth.TaskResource(parent.ID), Permission: auth.PermCreate})
		mcpAgent := f.mcpAs(t, agent)
		for _, c := range []struct {
			name, token, method, path, body string
		}{
			{"create depends_on", agent, "POST", "/v1/tasks", `{"type":"t","parent_id":` + itoa(parent.ID) + `,"depends_on":[X]}`},
			{"update add_depends_on", editor, "PATCH", "/v1/tasks/" + itoa(parent.ID), `{"add_depends_on":[X]}`},
			{"update add_children depends_on", editor, "PATCH", "/v1/tasks/" + itoa(parent.ID), `{"add_children":[{"type":"t","depends_on":[X]}]}`},
		} {
			t.Run(c.name, func(t *testing.T) {
				answers := map[string]bool{}
				for _, x := range []int64{pending.ID, cancelled.ID, missing} {
					before := f.taskCount(t)
					status, body := f.do(t, c.token, c.method, c.path, strings.ReplaceAll(c.body, "X", itoa(x)))
					if status != http.StatusBadRequest {
						t.Fatalf("dependency %d: %d %s, want 400", x, status, body)
					}
					e := decodeError(t, body)
					if !strings.Contains(e.Error.Message, "depends_on") || !strings.Contains(e.Error.Message, itoa(x)) {
						t.Fatalf("dependency %d: %s, want the message naming the field and the id", x, body)
					}
					answers[e.Error.Code+" "+strings.ReplaceAll(e.Error.Message, itoa(x), "ID")] = true
					if n, st := f.taskCount(t), f.stateOf(t, parent.ID); n != before || st != "OPEN" || len(f.taskOf(t, parent.ID).DependsOn) != 0 {
						t.Fatalf("dependency %d: %d tasks (want %d), parent %s with deps %v: a refusal changed something", x, n, before, st, f.taskOf(t, parent.ID).DependsOn)
					}
				}
				if len(answers) != 1 {
					t.Fatalf("an unreadable OPEN task, an unreadable CANCELLED one and a missing one are told apart: %v", answers)
				}
			})
		}
		t.Run("mcp create_task", func(t *testing.T) {
			answers := map[string]bool{}
			for _, x := range []int64{pending.ID, cancelled.ID, missing} {
				text, isErr := toolText(t, mcpAgent, mcpserver.ToolCreateTask, map[string]any{"type": "t", "parent_id": parent.ID, "depends_on": []int64{x}})
				if !isErr {
					t.Fatalf("dependency %d over MCP: %s, want a tool error", x, text)
				}
				answers[strings.ReplaceAll(text, itoa(x), "ID")] = true
			}
			if len(answers) != 1 {
				t.Fatalf("over MCP the three are told apart: %v", answers)
			}
		})
		// With read on the dependency, it is taken: the refusal above is
		// the missing permission's.
		reader := f.tokenWith(t, append(auth.TaskTokenGrants(parent.ID), cks.Grant{Resource: auth.TaskResource(pending.ID), Permission: auth.PermRead})...)
		status, body := f.do(t, reader, "POST", "/v1/tasks", `{"type":"t","parent_id":`+itoa(parent.ID)+`,"depends_on":[`+itoa(pending.ID)+`]}`)
		if status != http.StatusCreated || !strings.Contains(body, `"WAITING"`) {
			t.Fatalf("create depending on a readable task: %d %s, want 201 WAITING", status, body)
		}
	})
}

func (f *fixture) taskOf(t testing.TB, id int64) cks.Task {
	t.Helper()
	task, err := f.store.Tasks.GetTask(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return task
}
