package mcpserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/hub"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/surface/api"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// mcpOverAPI serves every tool at /mcp of a real api.API (bearer auth in
// front, the principal passed to the tools in the request context) and
// returns the server with a task to address.
func mcpOverAPI(t *testing.T) (*httptest.Server, *env, cks.Task) {
	t.Helper()
	e := newEnv(t)
	rt := startRuntime(t, e, hub.RuntimeConfig{})
	mcpserver.Register(e.srv, &ops.Services{Liveness: liveness.NewService(e.store.Driver(), e.clock), Tasks: e.store.Tasks, Principals: e.store.Principals, Sweepers: rt.Sweepers,
		Objects: e.store.Objects, Schedules: e.store.Schedules})
	a := api.New(api.Config{Services: &ops.Services{Liveness: liveness.NewService(e.store.Driver(), e.clock), Principals: e.store.Principals, Clock: e.clock}, MCP: mcpserver.HTTPHandler(e.srv)})
	hs := httptest.NewServer(a)
	t.Cleanup(func() { a.CloseStreams(); hs.Close() })
	task, _, err := e.store.Tasks.Enqueue(ctx(t), cks.NewTask{Type: "t", Title: "x"})
	if err != nil {
		t.Fatal(err)
	}
	return hs, e, task
}

// startRuntime makes the hub runtime of e's store (its clock set), with
// cfg, ended with t. The sweepers' passes run on the maintenance leader:
// the runtime, which is not started as a whole, takes part in the
// election.
func startRuntime(t testing.TB, e *env, cfg hub.RuntimeConfig) *hub.Runtime {
	t.Helper()
	cfg.Clock = e.clock
	rt, err := hub.NewRuntime(e.store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Leader.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Stop(context.Background()) })
	return rt
}

func connectAs(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	cs, err := newClient().Connect(ctx(t), &mcp.StreamableClientTransport{Endpoint: url + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func token(t *testing.T, s *auth.Service, grants ...cks.Grant) string {
	t.Helper()
	_, tok, err := auth.CreateToken(ctx(t), s, nil, "p", grants)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestMCPToolMatrix: over streamable HTTP, a principal holding exactly one
// permission P on a tool's resource may call it iff P (or admin) is the
// tool's permission; otherwise the answer is a tool error (IsError, not an
// HTTP 403: the HTTP request itself is authenticated) naming the permission
// and the resource.
func TestMCPToolMatrix(t *testing.T) {
	hs, e, task := mcpOverAPI(t)
	id := task.ID
	args := map[string]map[string]any{
		mcpserver.ToolListProcesses:      nil,
		mcpserver.ToolProcessStatus:      {"process_kind": "critic"},
		mcpserver.ToolRequestProcessStop: {"process_kind": "critic"},
		mcpserver.ToolReportProcess:      {"process_kind": "summarize", "instance_id": "i-matrix"},
		mcpserver.ToolListAgents:         nil,
		mcpserver.ToolAgentStatus:        {"agent_id": sweeper.LeaseReaperID},
		mcpserver.ToolStartAgent:         {"agent_id": sweeper.LeaseReaperID},
		mcpserver.ToolStopAgent:          {"agent_id": sweeper.LeaseReaperID},
		mcpserver.ToolPauseType:          {"type": "matrix"},
		mcpserver.ToolResumeType:         {"type": "matrix"},
		mcpserver.ToolListPausedTypes:    nil,
		mcpserver.ToolSetLimit:           {"name": "matrix", "pattern": "matrix:*", "max_running": 2},
		mcpserver.ToolListLimits:         nil,
		mcpserver.ToolDeleteLimit:        {"name": "matrix"},
		mcpserver.ToolGetUsage:           {"by": []string{"model"}},
		mcpserver.ToolReportUsage:        {"task_id": id, "lease_token": "nope", "input_tokens": 5},
		mcpserver.ToolListTasks:          nil,
		mcpserver.ToolGetTask:            {"task_id": id},
		mcpserver.ToolCreateTask:         {"type": "t"},
		mcpserver.ToolAnswerTask:         {"task_id": id, "text": "yes"},
		mcpserver.ToolCancelTask:         {"task_id": id},
		mcpserver.ToolStopTask:           {"task_id": id, "reason": "matrix"},
		mcpserver.ToolStartTask:          {"task_id": id},
		"retry_task":                     {"task_id": id},
		"task_stats":                     {"minutes": 5},
		"list_unclaimed_types":           {"after_s": 30},
		"bulk_stop_tasks":                {"task_ids": []int64{id}, "reason": "matrix", "wait": false},
		"bulk_start_tasks":               {"task_ids": []int64{id}},
		"bulk_cancel_tasks":              {"task_ids": []int64{id}},
		"bulk_retry_tasks":               {"task_ids": []int64{id}},
		mcpserver.ToolUpdateTask:         {"task_id": id, "priority": 3},
		mcpserver.ToolSubmitResearch:     {"question": "Why is the sky blue?"},
		mcpserver.ToolGetObject:          {"object_id": id},
		mcpserver.ToolListObjects:        nil,
		mcpserver.ToolListObjectVersions: {"object_id": id},
		mcpserver.ToolWriteObjectVersion: {"object_id": id, "base_version": 1, "content": map[string]any{}},
		mcpserver.ToolClaimTasks:         {"types": []string{"none-such"}},
		mcpserver.ToolMarkRunning:        {"task_id": id, "lease_token": "nope"},
		mcpserver.ToolTouchTask:          {"task_id": id, "lease_token": "nope"},
		mcpserver.ToolAddEvidence:        {"task_id": id, "lease_token": "nope", "kind": "log", "body": "b"},
		mcpserver.ToolAppendOutput:       {"task_id": id, "lease_token": "nope", "text": "line"},
		mcpserver.ToolGetOutput:          {"task_id": id},
		mcpserver.ToolRecordDecision:     {"task_id": id, "lease_token": "nope", "kind": "k", "derived_from_revision": 1},
		mcpserver.ToolReuseWorkspace:     {"task_id": id, "lease_token": "nope", "path": "/w", "derived_from_revision": 1},
		mcpserver.ToolConfirmAbort:       {"task_id": id, "lease_token": "nope"},
		mcpserver.ToolCompleteTask:       {"task_id": id, "lease_token": "nope"},
		mcpserver.ToolFailTask:           {"task_id": id, "lease_token": "nope"},
		mcpserver.ToolRequestInput:       {"task_id": id, "lease_token": "nope", "question": "q"},
		mcpserver.ToolClaimReview:        {"task_id": id},
		mcpserver.ToolApproveReview:      {"task_id": id, "lease_token": "nope"},
		mcpserver.ToolRejectReview:       {"task_id": id, "lease_token": "nope"},
		mcpserver.ToolCreateSchedule:     {"name": "matrix", "cron": "@hourly", "task": map[string]any{"type": "t"}},
		mcpserver.ToolListSchedules:      nil,
		mcpserver.ToolGetSchedule:        {"name": "matrix"},
		mcpserver.ToolPauseSchedule:      {"name": "matrix"},
		mcpserver.ToolResumeSchedule:     {"name": "matrix"},
		mcpserver.ToolTriggerSchedule:    {"name": "matrix"},
		mcpserver.ToolDeleteSchedule:     {"name": "matrix"},
	}
	if len(args) != len(mcpserver.Access()) {
		t.Fatalf("test covers %d tools, Access lists %d", len(args), len(mcpserver.Access()))
	}
	for tool, acc := range mcpserver.Access() {
		res := acc.Resource
		for k, v := range args[tool] {
			res = strings.ReplaceAll(res, "{"+k+"}", strings.TrimSpace(strings.Trim(jsonString(v), `"`)))
		}
		if strings.Contains(res, "{") {
			t.Fatalf("%s: resource %s not expanded", tool, res)
		}
		for _, perm := range auth.Permissions {
			cs := connectAs(t, hs.URL, token(t, e.store.Principals, cks.Grant{Resource: res, Permission: perm}))
			r := call(t, cs, tool, args[tool])
			forbidden := r.IsError && strings.Contains(text(t, r), "forbidden")
			allowed := perm == acc.Permission || perm == auth.PermAdmin
			if allowed == forbidden {
				t.Errorf("%s with only %s on %s: forbidden=%v, want %v (%s)", tool, perm, res, forbidden, !allowed, text(t, r))
			}
			if forbidden && !strings.Contains(text(t, r), "needs "+acc.Permission+" on "+res) {
				t.Errorf("%s: forbidden text %q does not name %s on %s", tool, text(t, r), acc.Permission, res)
			}
		}
	}
}

// TestMCPReadOnlyCannotCancelOrStop: a principal with read on / sees
// everything and changes nothing.
func TestMCPReadOnlyCannotCancelOrStop(t *testing.T) {
	hs, e, task := mcpOverAPI(t)
	cs := connectAs(t, hs.URL, token(t, e.store.Principals, cks.Grant{Resource: "/", Permission: auth.PermRead}))
	if r := call(t, cs, mcpserver.ToolGetTask, map[string]any{"task_id": task.ID}); r.IsError {
		t.Fatalf("get_task with read on /: %s", text(t, r))
	}
	for tool, a := range map[string]map[string]any{
		mcpserver.ToolCancelTask: {"task_id": task.ID},
		mcpserver.ToolStopAgent:  {"agent_id": sweeper.LeaseReaperID},
	} {
		r := call(t, cs, tool, a)
		if !r.IsError || !strings.Contains(text(t, r), "forbidden") {
			t.Errorf("%s with read on /: IsError=%v %q, want a forbidden tool error", tool, r.IsError, text(t, r))
		}
	}
	got, err := e.store.Tasks.GetTask(ctx(t), task.ID)
	if err != nil || got.State != task.State {
		t.Fatalf("task after refused cancel: %v, %v; want %s", got.State, err, task.State)
	}
}

// TestMCPWithoutPrincipalFailsClosed: the HTTP handler mounted without auth
// in front refuses every tool.
func TestMCPWithoutPrincipalFailsClosed(t *testing.T) {
	e := newEnv(t)
	hs := httptest.NewServer(mcpserver.HTTPHandler(e.srv))
	t.Cleanup(hs.Close)
	cs, err := newClient().Connect(ctx(t), &mcp.StreamableClientTransport{Endpoint: hs.URL, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if r := call(t, cs, mcpserver.ToolListProcesses, nil); !r.IsError || !strings.Contains(text(t, r), "needs read on /processes") {
		t.Fatalf("list_processes without a principal: %v %q", r.IsError, text(t, r))
	}
}

// TestMCPStopDoesNotGrantStartOrUpdate: a principal holding only stop on a
// task can stop it, but neither start it again nor edit it (ADR 0020: stop
// does not imply start). The stop is recorded under the principal's name.
func TestMCPStopDoesNotGrantStartOrUpdate(t *testing.T) {
	hs, e, task := mcpOverAPI(t)
	res := auth.TaskResource(task.ID)
	cs := connectAs(t, hs.URL, token(t, e.store.Principals, cks.Grant{Resource: res, Permission: auth.PermStop}))
	if r := call(t, cs, mcpserver.ToolStopTask, map[string]any{"task_id": task.ID, "reason": "hold"}); r.IsError {
		t.Fatalf("stop_task with stop on %s: %s", res, text(t, r))
	}
	for tool, c := range map[string]struct {
		args map[string]any
		perm string
	}{
		mcpserver.ToolStartTask:  {map[string]any{"task_id": task.ID}, auth.PermStart},
		mcpserver.ToolUpdateTask: {map[string]any{"task_id": task.ID, "acceptance_criteria": "mine now"}, auth.PermUpdate},
	} {
		r := call(t, cs, tool, c.args)
		if !r.IsError || !strings.Contains(text(t, r), "needs "+c.perm+" on "+res) {
			t.Errorf("%s with only stop: IsError=%v %q, want forbidden naming %s on %s", tool, r.IsError, text(t, r), c.perm, res)
		}
	}
	got, err := e.store.Tasks.GetTask(ctx(t), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "STOPPED" || got.Revision != task.Revision || got.AcceptanceCriteria != task.AcceptanceCriteria {
		t.Errorf("task after refused start/update: %s r%d %q; want STOPPED, unchanged", got.State, got.Revision, got.AcceptanceCriteria)
	}
	if last := got.Events[len(got.Events)-1]; last.To != "STOPPED" || last.Actor != "p" {
		t.Errorf("stop event %+v, want → STOPPED by the principal p", last)
	}
}

// TestMCPAgentCredentialCannotControlItsTask: a task-scoped agent credential
// (read, append, create on /tasks/ID) can neither stop, start nor update its
// own task, so it can neither escape a gate nor rewrite its criteria.
func TestMCPAgentCredentialCannotControlItsTask(t *testing.T) {
	hs, e, task := mcpOverAPI(t)
	res := auth.TaskResource(task.ID)
	cs := connectAs(t, hs.URL, token(t, e.store.Principals, auth.TaskTokenGrants(task.ID)...))
	if r := call(t, cs, mcpserver.ToolGetTask, map[string]any{"task_id": task.ID}); r.IsError {
		t.Fatalf("get_task with the agent credential: %s", text(t, r))
	}
	for tool, c := range map[string]struct {
		args map[string]any
		perm string
	}{
		mcpserver.ToolStopTask:   {map[string]any{"task_id": task.ID, "reason": "escape"}, auth.PermStop},
		mcpserver.ToolStartTask:  {map[string]any{"task_id": task.ID}, auth.PermStart},
		mcpserver.ToolUpdateTask: {map[string]any{"task_id": task.ID, "acceptance_criteria": "easier"}, auth.PermUpdate},
	} {
		r := call(t, cs, tool, c.args)
		if !r.IsError || !strings.Contains(text(t, r), "needs "+c.perm+" on "+res) {
			t.Errorf("%s with an agent credential: IsError=%v %q, want forbidden naming %s on %s", tool, r.IsError, text(t, r), c.perm, res)
		}
	}
	got, err := e.store.Tasks.GetTask(ctx(t), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != task.State || got.Revision != task.Revision || got.AcceptanceCriteria != task.AcceptanceCriteria {
		t.Errorf("task after refused calls: %s r%d %q; want unchanged", got.State, got.Revision, got.AcceptanceCriteria)
	}
}
