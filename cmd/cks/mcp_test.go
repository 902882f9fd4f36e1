package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/service/auth"
)

// mcpTransport connects an SDK client to a hub's tools as the principal of
// a token: through `cks mcp` over stdio, or at /mcp over streamable HTTP.
type mcpTransport struct {
	name    string
	connect func(t testing.TB, h *hubProc, token string) *mcp.ClientSession
}

var mcpTransports = []mcpTransport{
	{"stdio proxy", func(t testing.TB, h *hubProc, token string) *mcp.ClientSession {
		t.Helper()
		return connectProxy(t, nil, "--url", h.url, "--token", token)
	}},
	{"streamable HTTP", func(t testing.TB, h *hubProc, token string) *mcp.ClientSession {
		t.Helper()
		return connectMCP(t, &mcp.StreamableClientTransport{Endpoint: h.url + "/mcp", MaxRetries: -1,
			HTTPClient: &http.Client{Transport: bearer{token}}})
	}},
}

// connectProxy starts `cks mcp ARGS` (a clean CKS_* environment plus env)
// and connects the SDK client to it over its stdin and stdout.
func connectProxy(t testing.TB, env []string, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(cksBin, append([]string{"mcp"}, args...)...)
	cmd.Env = append(cleanEnv(), env...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cks mcp %v stderr:\n%s", args, stderr.String())
		}
	})
	return connectMCP(t, &mcp.CommandTransport{Command: cmd})
}

// useTool calls tool name and decodes its structured answer into out (nil:
// discarded), failing t on a protocol or tool error.
func useTool(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any, out any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	if res.IsError {
		t.Fatalf("%s %v: tool error %s", name, args, toolText(res))
	}
	if out == nil {
		return
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: decode %s: %v", name, b, err)
	}
}

// refusedTool calls tool name, wants a tool error and returns its text.
func refusedTool(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v, want a tool error", name, args, err)
	}
	if !res.IsError {
		t.Fatalf("%s %v: succeeded (%s), want a tool error", name, args, toolText(res))
	}
	return toolText(res)
}

func toolText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// newToken creates, as the hub's admin, a principal holding grants and
// returns its token.
func newToken(t testing.TB, h *hubProc, name string, grants ...cks.Grant) string {
	t.Helper()
	tok, err := client.New(h.url, h.token).CreateToken(context.Background(), cks.CreateTokenInput{Name: name, Grants: grants})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Token
}

// TestMCPWorkerProtocol drives a whole task through the worker tools, over
// the stdio proxy and over streamable HTTP, on both backends: a worker
// holding only read and append on /tasks claims it (revision, lease token,
// task credential), marks it running, heartbeats, records evidence and a
// decision; the operator stops it mid-run, and the worker's next heartbeat
// reports the abort; its completion under the revoked lease is refused,
// changing nothing; its confirmation lets the waiting stop answer
// abort_confirmed. The operator edits the criteria (a new revision) and
// starts the task; the worker's next claim re-enters it at the new
// revision, with a new lease, and completes it — while the zombie lease
// stays refused. The worker may not stop the task itself.
func TestMCPWorkerProtocol(t *testing.T) {
	forBackends(t, func(t *testing.T, db testDB) {
		h := startHub(t, "serve", "--database", db.url)
		for _, tr := range mcpTransports {
			t.Run(tr.name, func(t *testing.T) {
				typ := "mcp-work-" + strings.ReplaceAll(tr.name, " ", "-")
				worker := tr.connect(t, h, newToken(t, h, "worker-"+typ,
					cks.Grant{Resource: auth.ResourceTasks, Permission: auth.PermRead},
					cks.Grant{Resource: auth.ResourceTasks, Permission: auth.PermAppend}))
				operator := tr.connect(t, h, h.token)
				workTask(t, typ, worker, operator)
			})
		}
	})
}

// workTask is TestMCPWorkerProtocol's task, of type typ.
func workTask(t *testing.T, typ string, worker, operator *mcp.ClientSession) {
	var created cks.CreatedTask
	useTool(t, operator, "create_task", map[string]any{"type": typ, "title": "port the parser",
		"acceptance_criteria": "parses v1"}, &created)
	id := created.Task.ID

	claim := func() cks.ClaimedTask {
		t.Helper()
		var got cks.ClaimedTasks
		useTool(t, worker, "claim_tasks", map[string]any{"types": []string{typ}, "lease_s": 120}, &got)
		if len(got.Tasks) != 1 || got.Tasks[0].ID != id || got.Tasks[0].LeaseToken == "" {
			t.Fatalf("claim_tasks = %+v, want task %d with a lease token", got, id)
		}
		if got.AgentTokens[fmt.Sprint(id)] == "" {
			t.Fatalf("claim_tasks gave no task credential for %d: %v", id, got.AgentTokens)
		}
		return got.Tasks[0]
	}
	lease := func(c cks.ClaimedTask, more map[string]any) map[string]any {
		args := map[string]any{"task_id": id, "lease_token": c.LeaseToken}
		for k, v := range more {
			args[k] = v
		}
		return args
	}

	first := claim()
	if first.Revision != created.Task.Revision || first.State != cks.TaskClaimed {
		t.Fatalf("claimed %s at revision %d, want CLAIMED at %d", first.State, first.Revision, created.Task.Revision)
	}
	var task cks.Task
	useTool(t, worker, "mark_running", lease(first, nil), &task)
	if task.State != cks.TaskRunning {
		t.Fatalf("mark_running: %s", task.State)
	}
	var beat cks.TouchResult
	useTool(t, worker, "touch_task", lease(first, nil), &beat)
	if !beat.Held || beat.AbortRequested {
		t.Fatalf("heartbeat while running = %+v, want held", beat)
	}
	useTool(t, worker, "add_evidence", lease(first, map[string]any{"kind": "log", "body": "read the grammar"}), nil)
	var dec cks.Decision
	useTool(t, worker, "record_decision", lease(first, map[string]any{"kind": "plan", "text": "one pass",
		"derived_from_revision": first.Revision}), &dec)
	if dec.DerivedFromRevision != first.Revision {
		t.Fatalf("decision derived from %d, want %d", dec.DerivedFromRevision, first.Revision)
	}
	if msg := refusedTool(t, worker, "stop_task", map[string]any{"task_id": id, "reason": "mine"}); !strings.Contains(msg,
		"needs stop on /tasks/") {
		t.Fatalf("the worker's own stop_task: %q, want forbidden", msg)
	}

	// The operator stops it mid-run and waits for the confirmation.
	stopped := make(chan cks.TaskStopResult, 1)
	go func() {
		res, err := operator.CallTool(context.Background(), &mcp.CallToolParams{Name: "stop_task",
			Arguments: map[string]any{"task_id": id, "reason": "criteria change", "deadline": "60s"}})
		var out cks.TaskStopResult
		if err == nil && !res.IsError {
			b, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(b, &out) //nolint:errcheck // checked below by its fields
		}
		stopped <- out
	}()
	waitFor(t, "the stop", func() bool {
		useTool(t, operator, "get_task", map[string]any{"task_id": id}, &task)
		return task.State == cks.TaskStopped
	})
	useTool(t, worker, "touch_task", lease(first, nil), &beat)
	if beat.Held || !beat.AbortRequested {
		t.Fatalf("heartbeat after the stop = %+v, want lost with an abort requested", beat)
	}
	if msg := refusedTool(t, worker, "complete_task", lease(first, map[string]any{"result": "done anyway"})); !strings.Contains(msg, "lease") {
		t.Fatalf("completion under the revoked lease: %q, want a lease_lost refusal", msg)
	}
	var ab cks.Abort
	useTool(t, worker, "confirm_abort", lease(first, nil), &ab)
	if ab.Outcome != cks.AbortConfirmed {
		t.Fatalf("confirm_abort = %+v", ab)
	}
	select {
	case res := <-stopped:
		if res.Abort == nil || res.Abort.Outcome != cks.AbortConfirmed || res.Task.State != cks.TaskStopped {
			t.Fatalf("stop_task answered %+v, want STOPPED with the abort confirmed", res)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("stop_task did not answer after the confirmation")
	}

	// Edited while held, started again: the next claim sees the new revision.
	var upd cks.UpdateResult
	useTool(t, operator, "update_task", map[string]any{"task_id": id, "acceptance_criteria": "parses v2"}, &upd)
	if upd.Task.Revision <= first.Revision {
		t.Fatalf("update: revision %d, want past %d", upd.Task.Revision, first.Revision)
	}
	useTool(t, operator, "start_task", map[string]any{"task_id": id, "reason": "go again"}, &task)
	second := claim()
	if second.Revision != upd.Task.Revision || second.AcceptanceCriteria != "parses v2" || second.LeaseToken == first.LeaseToken {
		t.Fatalf("re-entry at revision %d %q (lease new: %v), want revision %d with the new criteria and a new lease",
			second.Revision, second.AcceptanceCriteria, second.LeaseToken != first.LeaseToken, upd.Task.Revision)
	}
	useTool(t, worker, "mark_running", lease(second, nil), nil)
	useTool(t, worker, "record_decision", lease(second, map[string]any{"kind": "plan", "text": "two passes",
		"derived_from_revision": second.Revision}), nil)
	if msg := refusedTool(t, worker, "complete_task", lease(first, nil)); !strings.Contains(msg, "lease") {
		t.Fatalf("the zombie lease's completion: %q, want a lease_lost refusal", msg)
	}
	useTool(t, worker, "complete_task", lease(second, map[string]any{"result": "parser ported"}), &task)
	if task.State != cks.TaskCompleted {
		t.Fatalf("complete_task: %s", task.State)
	}

	useTool(t, operator, "get_task", map[string]any{"task_id": id}, &task)
	if task.State != cks.TaskCompleted || task.Result != "parser ported" || task.Current == nil ||
		len(task.Current.Decisions) != 1 || task.Current.Decisions[0].DerivedFromRevision != second.Revision {
		t.Fatalf("the finished task: %s %q, current %+v", task.State, task.Result, task.Current)
	}
	if len(task.History) != 1 || !task.History[0].Aborted || len(task.History[0].Evidence) != 1 {
		t.Fatalf("the stopped attempt in history: %+v, want one aborted attempt with its evidence", task.History)
	}
}

// TestMCPProxyIsTheHubs: `cks mcp` lists exactly the hub's tools — names,
// descriptions, schemas, annotations — and its instructions, and every call
// acts on the hub's state with the token's permissions: a principal with
// read on / reads the task the hub holds and is refused a create and a
// sweeper stop in the hub's words (the same text as over /mcp), changing
// nothing. It runs no sweeper of its own: start_agent reaches the hub's.
func TestMCPProxyIsTheHubs(t *testing.T) {
	h := startHub(t, "serve")
	direct := mcpTransports[1].connect(t, h, h.token)
	proxied := connectProxy(t, nil, "--data-dir", string(h.dir)) // URL and admin token from the data directory
	want, got := toolList(t, direct), toolList(t, proxied)
	if len(got) == 0 || !slices.Equal(got, want) {
		t.Fatalf("the proxy lists\n%v\nthe hub\n%v", got, want)
	}
	if a, b := proxied.InitializeResult().Instructions, direct.InitializeResult().Instructions; a != b || !strings.Contains(a, "claim_tasks") {
		t.Errorf("the proxy's instructions %q, the hub's %q", a, b)
	}

	var created cks.CreatedTask
	useTool(t, proxied, "create_task", map[string]any{"type": "proxied"}, &created)
	api := client.New(h.url, h.token)
	if got := getTask(t, api, created.Task.ID); got.CreatedBy != "admin" || got.Type != "proxied" {
		t.Fatalf("the hub's task %d: created by %q, type %q; want the admin token's principal", got.ID, got.CreatedBy, got.Type)
	}
	useTool(t, proxied, "stop_agent", map[string]any{"agent_id": "graph_health"}, nil)
	useTool(t, proxied, "start_agent", map[string]any{"agent_id": "graph_health"}, nil)
	sw, err := client.Do(context.Background(), api, cks.OpAgentStatus, cks.SweeperInput{AgentID: "graph_health"})
	if err != nil || !sw.Running {
		t.Fatalf("the hub's graph_health after start_agent through the proxy: %+v %v, want running", sw, err)
	}

	reader := newToken(t, h, "reader", cks.Grant{Resource: "/", Permission: auth.PermRead})
	restricted := connectProxy(t, nil, "--url", h.url, "--token", reader)
	readerDirect := mcpTransports[1].connect(t, h, reader)
	var read cks.Task
	useTool(t, restricted, "get_task", map[string]any{"task_id": created.Task.ID}, &read)
	if read.ID != created.Task.ID {
		t.Fatalf("get_task with read on /: %+v", read)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"create_task", map[string]any{"type": "not-mine"}, "needs create on /tasks"},
		{"stop_agent", map[string]any{"agent_id": "graph_health"}, "needs control on /sweepers/graph_health"},
		{"claim_tasks", map[string]any{"types": []string{"proxied"}}, "needs append on /tasks"},
	} {
		msg := refusedTool(t, restricted, c.tool, c.args)
		if !strings.Contains(msg, c.want) {
			t.Errorf("%s with read on / through the proxy: %q, want %q", c.tool, msg, c.want)
		}
		if hub := refusedTool(t, readerDirect, c.tool, c.args); hub != msg {
			t.Errorf("%s: the proxy says %q, the hub %q", c.tool, msg, hub)
		}
	}
	if got := getTask(t, api, created.Task.ID); got.State != cks.TaskOpen {
		t.Fatalf("the task after the refused claim: %s", got.State)
	}
	if sw, err = client.Do(context.Background(), api, cks.OpAgentStatus, cks.SweeperInput{AgentID: "graph_health"}); err != nil ||
		!sw.Running {
		t.Fatalf("graph_health after the refused stop: %+v %v, want running", sw, err)
	}
}

// toolList is every tool of cs as JSON, in order.
func toolList(t testing.TB, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tool := range res.Tools {
		b, _ := json.Marshal(tool)
		out = append(out, string(b))
	}
	return out
}

// TestMCPKnowledge: the knowledge store through the stdio proxy: a question
// submitted is followed with get_object until the hub's pipeline resolves
// it (the wait `cks research --wait` does), list_objects lists it, and two
// writes from one base version fork an object, which list_object_versions
// and get_object show.
func TestMCPKnowledge(t *testing.T) {
	h := startHubWith(t, []string{"CKS_PIPELINE_IN_PROCESS=true"})
	cs := connectProxy(t, nil, "--url", h.url, "--token", h.token)
	var q cks.Object
	useTool(t, cs, "submit_research", map[string]any{"question": "How does cks stop a running task?"}, &q)
	var v cks.ObjectView
	waitFor(t, "the question resolved", func() bool {
		useTool(t, cs, "get_object", map[string]any{"object_id": q.ID}, &v)
		return v.Status == cks.StatusResolved || v.Status == cks.StatusNeedsInput
	})
	if v.Status != cks.StatusResolved || len(v.Reasoning) == 0 {
		t.Fatalf("question %d: %s with %d linked objects, want resolved with its chain", q.ID, v.Status, len(v.Reasoning))
	}
	var page cks.ObjectPage
	useTool(t, cs, "list_objects", map[string]any{"kind": []string{cks.KindQuestion}}, &page)
	if len(page.Objects) != 1 || page.Objects[0].ID != q.ID || page.Objects[0].ClaimToken != "" {
		t.Fatalf("list_objects kind question: %+v", page.Objects)
	}

	var vl cks.VersionList
	useTool(t, cs, "list_object_versions", map[string]any{"object_id": q.ID}, &vl)
	if len(vl.Heads) != 1 || vl.Forked {
		t.Fatalf("versions of %d before the writes: %+v, want one head", q.ID, vl)
	}
	base := vl.Heads[0]
	for _, note := range []string{"left", "right"} {
		useTool(t, cs, "write_object_version", map[string]any{"object_id": q.ID, "base_version": base,
			"content": map[string]any{"note": note}}, nil)
	}
	useTool(t, cs, "list_object_versions", map[string]any{"object_id": q.ID}, &vl)
	if len(vl.Heads) != 2 || !vl.Forked {
		t.Fatalf("versions after two writes from %d: %+v, want a fork of two heads", base, vl)
	}
	useTool(t, cs, "get_object", map[string]any{"object_id": q.ID}, &v)
	if !v.Forked || len(v.Heads) != 2 {
		t.Fatalf("get_object after the fork: forked %v, %d heads", v.Forked, len(v.Heads))
	}
	if msg := refusedTool(t, cs, "write_object_version", map[string]any{"object_id": q.ID, "base_version": 0,
		"content": map[string]any{}}); !strings.Contains(msg, "base_version") {
		t.Fatalf("a write from version 0: %q, want a refusal naming base_version", msg)
	}
}

// TestMCPNoHub: `cks mcp` with no hub to be a client of exits 1 at once,
// saying how to point it at one — no URL anywhere, a URL nobody answers
// at, a token the hub refuses — and leaves the directory it ran in as it
// was (no .cks of its own).
func TestMCPNoHub(t *testing.T) {
	h := startHub(t, "serve")
	closed := closedPort(t)
	for _, c := range []struct {
		name string
		args []string
		env  []string
		want []string
	}{
		{"no hub anywhere", nil, nil, []string{"mcp is a client of a hub", "--embedded", "no hub URL", "--url", "CKS_URL", "cks serve"}},
		{"nobody at the URL", []string{"--url", "http://" + closed, "--token", h.token}, nil,
			[]string{closed + "/mcp did not answer", "cks serve", "--url or CKS_URL"}},
		{"refused token", nil, []string{"CKS_URL=" + h.url, "CKS_TOKEN=cks_nonsense"},
			[]string{"hub refused the token", "401", "--token or CKS_TOKEN"}},
		{"--database without --embedded", []string{"--database", "x.db"}, nil, []string{"--embedded"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(cksBin, append([]string{"mcp"}, c.args...)...)
			cmd.Dir = dir
			cmd.Env = append(cleanEnv(), c.env...)
			var out syncBuffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			wantCode := 1
			if strings.HasPrefix(c.name, "--database") {
				wantCode = 2
			}
			if code != wantCode {
				t.Fatalf("cks mcp %v: exit %d (%v), want %d\n%s", c.args, code, err, wantCode, out.String())
			}
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("cks mcp %v says %q, lacking %q", c.args, out.String(), w)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, datadir.Default)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("cks mcp left %s in the directory it ran in (%v)", datadir.Default, err)
			}
		})
	}
}

// TestMCPEmbedded: `cks mcp --embedded` serves the tools from the database
// itself, with no hub, and runs no sweeper: the sweeper tools are not
// offered at all.
func TestMCPEmbedded(t *testing.T) {
	dir := datadir.Dir(t.TempDir())
	s := openStore(t, dir)
	backendtest.MustUpsert(t, s, freshRow("embedded-1", "critic"))
	sess := connectProxy(t, nil, "--embedded", "--data-dir", string(dir))
	assertMCPListsAlive(t, sess, "embedded-1")
	names := map[string]bool{}
	for _, tool := range toolList(t, sess) {
		var v struct{ Name string }
		json.Unmarshal([]byte(tool), &v) //nolint:errcheck // a tool is JSON
		names[v.Name] = true
	}
	for _, name := range []string{"list_agents", "agent_status", "start_agent", "stop_agent"} {
		if names[name] {
			t.Errorf("--embedded offers %s: it runs no sweepers", name)
		}
	}
	if !names["claim_tasks"] || !names["list_tasks"] {
		t.Errorf("--embedded lacks the task tools: %v", names)
	}
}

// closedPort returns a loopback address nobody listens on.
func closedPort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestMCPAnswersBeforeStdinEnds (issue 37, finding 5): a client that writes
// a request to `cks mcp` and closes stdin at once gets the answer before
// the process exits — through the proxy (a call that travels to the hub)
// and --embedded alike.
func TestMCPAnswersBeforeStdinEnds(t *testing.T) {
	h := startHub(t, "serve")
	dir := datadir.Dir(t.TempDir())
	openStore(t, dir)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"proxy", []string{"--url", h.url, "--token", h.token}},
		{"embedded", []string{"--embedded", "--data-dir", string(dir)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, cksBin, append([]string{"mcp"}, tc.args...)...)
			cmd.Env = cleanEnv()
			cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"script","version":"0"}}}` + "\n" +
				`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
				`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_tasks","arguments":{}}}` + "\n")
			var stderr syncBuffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("cks mcp: %v\n%s", err, stderr.String())
			}
			var answered bool
			for line := range strings.Lines(string(out)) {
				var msg struct {
					ID     int             `json:"id"`
					Result json.RawMessage `json:"result"`
				}
				if json.Unmarshal([]byte(line), &msg) == nil && msg.ID == 2 && strings.Contains(string(msg.Result), `"tasks"`) {
					answered = true
				}
			}
			if !answered {
				t.Fatalf("no answer to the call before the exit; stdout:\n%s\nstderr:\n%s", out, stderr.String())
			}
		})
	}
}
