package mcpserver_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// toolText returns the text content of a tool result.
func toolText(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatal("tool result has no content")
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", res.Content[0])
	}
	return tc.Text
}

func structured[T any](t testing.TB, res *mcp.CallToolResult) T {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", toolText(t, res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return v
}

type taskOut struct {
	ID      int64           `json:"task_id"`
	State   string          `json:"state"`
	Payload json.RawMessage `json:"payload"`
	Answer  string          `json:"answer"`
	Events  []struct {
		To    string `json:"to"`
		Actor string `json:"actor"`
	} `json:"events"`
}

func TestTaskTools(t *testing.T) {
	e := newEnv(t)
	mcpserver.Register(e.srv, &ops.Services{Tasks: e.store.Tasks})
	cs := connectInMemory(t, e.srv)

	created := structured[struct {
		Task    taskOut `json:"task"`
		Created bool    `json:"created"`
	}](t, call(t, cs, mcpserver.ToolCreateTask, map[string]any{
		"type": "research", "title": "t", "priority": 7, "payload": map[string]any{"q": []int{1, 2}}, "dedupe_key": "k",
	}))
	if !created.Created || created.Task.State != "OPEN" || !strings.Contains(string(created.Task.Payload), `"q"`) {
		t.Fatalf("create_task = %+v", created)
	}
	id := created.Task.ID
	dup := structured[struct {
		Task    taskOut `json:"task"`
		Created bool    `json:"created"`
	}](t, call(t, cs, mcpserver.ToolCreateTask, map[string]any{"type": "research", "dedupe_key": "k"}))
	if dup.Created || dup.Task.ID != id {
		t.Fatalf("dedupe create_task = %+v, want task %d back", dup, id)
	}

	page := structured[struct {
		Tasks []taskOut `json:"tasks"`
	}](t, call(t, cs, mcpserver.ToolListTasks, map[string]any{"state": []string{"open"}}))
	if len(page.Tasks) != 1 || page.Tasks[0].ID != id {
		t.Fatalf("list_tasks = %+v", page)
	}

	got := structured[taskOut](t, call(t, cs, mcpserver.ToolGetTask, map[string]any{"task_id": id}))
	if got.ID != id || len(got.Events) != 1 || got.Events[0].Actor != "mcp" {
		t.Fatalf("get_task = %+v, want the creation event by mcp", got)
	}

	cancelled := structured[taskOut](t, call(t, cs, mcpserver.ToolCancelTask, map[string]any{"task_id": id, "reason": "dup"}))
	if cancelled.State != "CANCELLED" {
		t.Fatalf("cancel_task = %+v", cancelled)
	}

	errorsCases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{mcpserver.ToolGetTask, map[string]any{"task_id": 999}, "999"},
		{mcpserver.ToolAnswerTask, map[string]any{"task_id": id, "text": "x"}, "CANCELLED"},
		{mcpserver.ToolAnswerTask, map[string]any{"task_id": id, "text": ""}, "text"},
		{mcpserver.ToolListTasks, map[string]any{"state": []string{"DONE"}}, "invalid state"},
		{mcpserver.ToolCreateTask, map[string]any{"type": ""}, "type"},
		{mcpserver.ToolCreateTask, map[string]any{"type": "t", "depends_on": []int{424242}}, "depends_on"},
	}
	for _, c := range errorsCases {
		res := call(t, cs, c.tool, c.args)
		if !res.IsError || !strings.Contains(toolText(t, res), c.want) {
			t.Errorf("%s(%v): IsError=%v %q, want a tool error mentioning %q", c.tool, c.args, res.IsError, toolText(t, res), c.want)
		}
	}
}

// The operator controls of ADR 0020: stop_task, start_task, update_task.

// stopOut is the structured result of stop_task.
type stopOut struct {
	Task  ctlTask   `json:"task"`
	Abort *abortOut `json:"abort"`
}

type abortOut struct {
	ID       int64  `json:"abort_id"`
	Executor string `json:"executor"`
	Outcome  string `json:"outcome"`
	Reason   string `json:"reason"`
}

type ctlTask struct {
	taskOut
	Revision           int             `json:"revision"`
	Attempts           int             `json:"attempts"`
	Restarts           int             `json:"restarts"`
	Title              string          `json:"title"`
	Priority           int             `json:"priority"`
	AcceptanceCriteria string          `json:"acceptance_criteria"`
	Metadata           json.RawMessage `json:"metadata"`
	DependsOn          []int64         `json:"depends_on"`
	LastAbort          *abortOut       `json:"last_abort"`
}

type updateOut struct {
	Task     ctlTask   `json:"task"`
	Path     string    `json:"path"`
	Abort    *abortOut `json:"abort"`
	Children []ctlTask `json:"children"`
}

// running enqueues a task of type typ and makes worker-1 run it.
func running(t *testing.T, e *env, typ string) cks.ClaimedTask {
	t.Helper()
	task := backendtest.MustEnqueue(t, e.store, cks.NewTask{Type: typ, Title: typ, AcceptanceCriteria: "old criteria"})
	got, err := e.store.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "worker-1", Types: []string{typ}, N: 1, Lease: time.Hour})
	if err != nil || len(got) != 1 || got[0].ID != task.ID {
		t.Fatalf("claim %s: %v %+v", typ, err, got)
	}
	r, err := e.store.Tasks.MarkRunning(ctx(t), task.ID, got[0].LeaseToken)
	if err != nil {
		t.Fatal(err)
	}
	return cks.ClaimedTask{Task: r, LeaseToken: got[0].LeaseToken}
}

func TestStopStartUpdateTools(t *testing.T) {
	e := newEnv(t)
	mcpserver.Register(e.srv, &ops.Services{Tasks: e.store.Tasks})
	cs := connectInMemory(t, e.srv)

	// Stop of a running task whose executor never answers: the call waits
	// out the deadline and reports the abort unconfirmed, naming the executor.
	run := running(t, e, "ctl")
	stopped := structured[stopOut](t, call(t, cs, mcpserver.ToolStopTask, map[string]any{
		"task_id": run.ID, "reason": "runaway", "deadline": "200ms"}))
	if stopped.Task.State != "STOPPED" || stopped.Abort == nil || stopped.Abort.Outcome != "abort_unconfirmed" ||
		stopped.Abort.Executor != "worker-1" || stopped.Abort.Reason != "runaway" {
		t.Fatalf("stop_task of a running task = %+v (abort %+v)", stopped, stopped.Abort)
	}
	if stopped.Task.Attempts != 0 {
		t.Errorf("stop consumed an attempt: attempts=%d", stopped.Task.Attempts)
	}
	got := structured[ctlTask](t, call(t, cs, mcpserver.ToolGetTask, map[string]any{"task_id": run.ID}))
	if got.LastAbort == nil || got.LastAbort.Outcome != "abort_unconfirmed" {
		t.Errorf("get_task after stop: last_abort %+v, want the stored unconfirmed abort", got.LastAbort)
	}
	if last := got.Events[len(got.Events)-1]; last.To != "STOPPED" || last.Actor != "mcp" {
		t.Errorf("stop event = %+v, want → STOPPED by mcp", last)
	}

	// A STOPPED task is edited in place; start re-evaluates it.
	upd := structured[updateOut](t, call(t, cs, mcpserver.ToolUpdateTask, map[string]any{
		"task_id": run.ID, "acceptance_criteria": "new criteria", "metadata": map[string]any{"owner": "ops"}, "title": "renamed"}))
	if upd.Path != "in_place" || upd.Abort != nil || upd.Task.State != "STOPPED" || upd.Task.Revision != 2 ||
		upd.Task.AcceptanceCriteria != "new criteria" || upd.Task.Title != "renamed" || !strings.Contains(string(upd.Task.Metadata), `"owner"`) {
		t.Fatalf("update_task of a STOPPED task = %+v", upd)
	}
	started := structured[ctlTask](t, call(t, cs, mcpserver.ToolStartTask, map[string]any{"task_id": run.ID, "reason": "fixed"}))
	if started.State != "OPEN" || started.Restarts != 1 || started.Attempts != 0 {
		t.Fatalf("start_task = %+v, want OPEN with restarts 1, attempts 0", started)
	}

	// Stop without waiting: the abort comes back pending and the executor's
	// later confirmation settles it.
	run2 := running(t, e, "nowait")
	nowait := structured[stopOut](t, call(t, cs, mcpserver.ToolStopTask, map[string]any{
		"task_id": run2.ID, "reason": "hold", "wait": false}))
	if nowait.Abort == nil || nowait.Abort.Outcome != "abort_pending" {
		t.Fatalf("stop_task wait=false: abort %+v, want pending", nowait.Abort)
	}
	if _, err := e.store.Tasks.ConfirmAbort(ctx(t), run2.ID, run2.LeaseToken); err != nil {
		t.Fatal(err)
	}
	got = structured[ctlTask](t, call(t, cs, mcpserver.ToolGetTask, map[string]any{"task_id": run2.ID}))
	if got.LastAbort == nil || got.LastAbort.Outcome != "abort_confirmed" {
		t.Errorf("after the executor confirmed: last_abort %+v", got.LastAbort)
	}

	// Stop of a task nobody runs: straight to STOPPED, no abort.
	idle := backendtest.MustEnqueue(t, e.store, cks.NewTask{Type: "idle"})
	plain := structured[stopOut](t, call(t, cs, mcpserver.ToolStopTask, map[string]any{"task_id": idle.ID, "reason": "later"}))
	if plain.Task.State != "STOPPED" || plain.Abort != nil {
		t.Fatalf("stop_task of an OPEN task = %+v", plain)
	}

	// Update of a running task: a non-material edit applies live ...
	run3 := running(t, e, "live")
	live := structured[updateOut](t, call(t, cs, mcpserver.ToolUpdateTask, map[string]any{"task_id": run3.ID, "priority": 9}))
	if live.Path != "live" || live.Task.State != "RUNNING" || live.Task.Priority != 9 || live.Task.Revision != 1 || live.Abort != nil {
		t.Fatalf("priority update of a running task = %+v", live)
	}
	// ... a material one stops, applies and starts as one operation.
	restart := structured[updateOut](t, call(t, cs, mcpserver.ToolUpdateTask, map[string]any{
		"task_id": run3.ID, "acceptance_criteria": "rewritten", "deadline": "100ms",
		"add_children": []map[string]any{{"type": "child", "title": "part one", "payload": map[string]any{"n": 1}}}}))
	if restart.Path != "stop_apply_start" || restart.Task.State != "OPEN" || restart.Task.Revision != 2 ||
		restart.Task.Restarts != 1 || restart.Task.Attempts != 0 || restart.Task.AcceptanceCriteria != "rewritten" {
		t.Fatalf("material update of a running task = %+v", restart)
	}
	if restart.Abort == nil || restart.Abort.Executor != "worker-1" || restart.Abort.Outcome != "abort_unconfirmed" {
		t.Errorf("material update abort = %+v, want unconfirmed naming worker-1", restart.Abort)
	}
	if len(restart.Children) != 1 || restart.Children[0].Title != "part one" {
		t.Errorf("children = %+v", restart.Children)
	}
	if _, err := e.store.Tasks.Complete(ctx(t), run3.ID, run3.LeaseToken, false, "late"); !errors.Is(err, cks.ErrLeaseLost) {
		t.Errorf("the old executor's Complete after the restart: %v, want ErrLeaseLost", err)
	}
}

func TestTaskControlBadInputChangesNothing(t *testing.T) {
	e := newEnv(t)
	mcpserver.Register(e.srv, &ops.Services{Tasks: e.store.Tasks})
	cs := connectInMemory(t, e.srv)

	a := backendtest.MustEnqueue(t, e.store, cks.NewTask{Type: "a", Title: "a"})
	b := backendtest.MustEnqueue(t, e.store, cks.NewTask{Type: "b", Title: "b", DependsOn: []int64{a.ID}})
	done := backendtest.MustEnqueue(t, e.store, cks.NewTask{Type: "done", Title: "done"})
	if _, err := e.store.Tasks.Cancel(ctx(t), done.ID, "tester", "not needed"); err != nil {
		t.Fatal(err)
	}
	snapshot := func() map[int64]string {
		out := map[int64]string{}
		for _, id := range []int64{a.ID, b.ID, done.ID} {
			got, err := e.store.Tasks.GetTask(ctx(t), id)
			if err != nil {
				t.Fatal(err)
			}
			got.Events = append(got.Events, cks.TaskEvent{}) // keep the count in the snapshot
			out[id] = fmt.Sprintf("%s r%d p%d %v %s %d %s %s", got.State, got.Revision, got.Priority, got.DependsOn,
				got.AcceptanceCriteria, len(got.Events), got.Title, got.UpdatedAt)
		}
		return out
	}
	before := snapshot()

	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{mcpserver.ToolListTasks, map[string]any{"state": []string{"PAUSED"}}, "invalid state"},
		{mcpserver.ToolStopTask, map[string]any{"task_id": done.ID, "reason": "x"}, "CANCELLED"},
		{mcpserver.ToolStopTask, map[string]any{"task_id": a.ID}, "reason"},
		{mcpserver.ToolStopTask, map[string]any{"task_id": a.ID, "reason": " "}, "reason"},
		{mcpserver.ToolStopTask, map[string]any{"task_id": a.ID, "reason": "x", "deadline": "-1s"}, "deadline"},
		{mcpserver.ToolStopTask, map[string]any{"task_id": a.ID, "reason": "x", "deadline": "1h"}, "deadline"},
		{mcpserver.ToolStopTask, map[string]any{"task_id": 424242, "reason": "x"}, "424242"},
		{mcpserver.ToolStartTask, map[string]any{"task_id": a.ID}, "OPEN"},
		{mcpserver.ToolStartTask, map[string]any{"task_id": done.ID}, "CANCELLED"},
		{mcpserver.ToolStartTask, map[string]any{"task_id": 424242}, "424242"},
		{mcpserver.ToolUpdateTask, map[string]any{"task_id": a.ID, "add_depends_on": []int64{b.ID}}, "add_depends_on"},
		{mcpserver.ToolUpdateTask, map[string]any{"task_id": a.ID, "add_depends_on": []int64{a.ID}}, "add_depends_on"},
		{mcpserver.ToolUpdateTask, map[string]any{"task_id": a.ID, "add_depends_on": []int64{424242}}, "add_depends_on"},
		{mcpserver.ToolUpdateTask, map[string]any{"task_id": a.ID}, "patch"},
		{mcpserver.ToolUpdateTask, map[string]any{"task_id": a.ID, "priority": 5000}, "priority"},
		{mcpserver.ToolUpdateTask, map[string]any{"task_id": a.ID, "criteria": "typo'd field"}, "criteria"},
		{mcpserver.ToolUpdateTask, map[string]any{"task_id": a.ID, "cancel_children": []int64{b.ID}}, "cancel_children"},
		{mcpserver.ToolUpdateTask, map[string]any{"task_id": done.ID, "title": "x"}, "CANCELLED"},
		{mcpserver.ToolUpdateTask, map[string]any{"task_id": a.ID, "add_children": []map[string]any{{"title": "no type"}}}, "type"},
	} {
		res := call(t, cs, c.tool, c.args)
		if !res.IsError || !strings.Contains(toolText(t, res), c.want) {
			t.Errorf("%s(%v): IsError=%v %q, want a tool error mentioning %q", c.tool, c.args, res.IsError, toolText(t, res), c.want)
		}
	}
	if after := snapshot(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("refused calls changed tasks:\nbefore %v\nafter  %v", before, after)
	}
	n, err := e.store.Tasks.CountTasks(ctx(t), cks.TaskFilter{})
	if err != nil || n != 3 {
		t.Errorf("%d tasks after refused calls (%v), want 3 (no child created)", n, err)
	}
}
