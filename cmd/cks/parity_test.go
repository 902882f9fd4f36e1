package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/hub"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/knowledge"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/surface/api"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// parityCase is how the parity test calls one operation: an input the
// operation refuses (over HTTP, MCP and `cks api`) and, where the operation
// has a command of its own, that command with the same input; and a valid
// input (with its command), which a principal without the operation's
// permission sends.
type parityCase struct {
	invalid    string
	invalidCLI []string // nil: the command cannot say this input
	valid      string
	validCLI   []string
}

// parityCases are the cases of every operation of the table, by name, with
// $T an OPEN task, $C a cancelled one, $O an object.
var parityCases = map[string]parityCase{
	"list_processes":       {`{"kind":"jani tor"}`, []string{"process", "list", "--kind", "jani tor", "--history"}, `{"history":true,"alive":false}`, []string{"process", "list", "--history", "--alive=false"}},
	"process_status":       {`{"process_kind":"jani tor"}`, []string{"process", "status", "jani tor"}, `{"process_kind":"critic"}`, []string{"process", "status", "critic"}},
	"request_process_stop": {`{"process_kind":"jani tor"}`, []string{"process", "stop", "jani tor"}, `{"process_kind":"critic"}`, []string{"process", "stop", "critic"}},
	"report_process": {`{"process_kind":"summarize","instance_id":"i-1","liveness_interval_s":0.5}`,
		[]string{"process", "report", "summarize", "--instance-id", "i-1", "--liveness-interval-s", "0.5"},
		`{"process_kind":"summarize","instance_id":"i-1"}`, []string{"process", "report", "summarize", "--instance-id", "i-1"}},
	"create_task": {`{"type":""}`, []string{"task", "create"}, `{"type":"t"}`, []string{"task", "create", "--type", "t"}},
	"list_tasks": {`{"q":"build","created_by":"op","sort":"newest"}`, []string{"task", "list", "--q", "build", "--created-by", "op", "--sort", "newest"},
		`{"q":"build","unconfirmed_abort":true,"sort":"-updated"}`, []string{"task", "list", "--q", "build", "--unconfirmed-abort", "--sort", "-updated"}},
	"count_tasks": {`{"state":["DONE"]}`, nil, `{}`, nil},
	"task_stats":  {`{"minutes":-1}`, []string{"task", "stats", "--minutes", "-1"}, `{"minutes":5}`, []string{"task", "stats", "--minutes", "5"}},
	"list_unclaimed_types": {`{"after_s":0.5}`, []string{"task", "unclaimed", "--after-s", "0.5"}, `{"after_s":30}`,
		[]string{"task", "unclaimed", "--after-s", "30"}},
	"get_task":    {`{"task_id":0}`, []string{"task", "show", "0"}, `{"task_id":$T}`, []string{"task", "show", "$T"}},
	"answer_task": {`{"task_id":$T,"text":"  "}`, []string{"task", "answer", "$T", "  "}, `{"task_id":$T,"text":"yes"}`, []string{"task", "answer", "$T", "yes"}},
	"cancel_task": {`{"task_id":$C}`, []string{"task", "cancel", "$C"}, `{"task_id":$T}`, []string{"task", "cancel", "$T"}},
	"stop_task":   {`{"task_id":$T,"reason":" "}`, []string{"task", "stop", "$T", "--reason", " "}, `{"task_id":$T,"reason":"r"}`, []string{"task", "stop", "$T", "--reason", "r"}},
	"start_task":  {`{"task_id":$T}`, []string{"task", "start", "$T"}, `{"task_id":$T}`, []string{"task", "start", "$T"}},
	"retry_task":  {`{"task_id":$T}`, []string{"task", "retry", "$T"}, `{"task_id":$C}`, []string{"task", "retry", "$C"}},
	"update_task": {`{"task_id":$T}`, []string{"task", "update", "$T"}, `{"task_id":$T,"priority":1}`, []string{"task", "update", "$T", "--priority", "1"}},
	"bulk_stop_tasks": {`{"reason":"r"}`, []string{"task", "bulk", "stop", "--reason", "r"}, `{"task_ids":[$T],"reason":"r"}`,
		[]string{"task", "bulk", "stop", "--ids", "$T", "--reason", "r"}},
	"bulk_start_tasks": {`{"state":["OPEN"],"limit":501}`, []string{"task", "bulk", "start", "--state", "OPEN", "--limit", "501"},
		`{"task_ids":[$T]}`, []string{"task", "bulk", "start", "--ids", "$T"}},
	"bulk_cancel_tasks": {`{"task_ids":[$T],"state":["OPEN"]}`, []string{"task", "bulk", "cancel", "--ids", "$T", "--state", "OPEN"},
		`{"task_ids":[$T]}`, []string{"task", "bulk", "cancel", "--ids", "$T"}},
	"bulk_retry_tasks": {`{"state":["DONE"],"q":"x"}`, []string{"task", "bulk", "retry", "--state", "DONE", "--q", "x"}, `{"task_ids":[$C]}`,
		[]string{"task", "bulk", "retry", "--ids", "$C"}},
	"claim_tasks":       {`{"lease_s":0.5}`, []string{"task", "claim", "--lease-s", "0.5"}, `{"running":true}`, []string{"task", "claim", "--running"}},
	"mark_running":      {`{"task_id":$T,"lease_token":"nope"}`, nil, `{"task_id":$T,"lease_token":"nope"}`, nil},
	"touch_task":        {`{"task_id":0,"lease_token":"nope"}`, nil, `{"task_id":$T,"lease_token":"nope"}`, nil},
	"append_output":     {`{"task_id":$T,"lease_token":"nope","stream":"std out","text":"x"}`, nil, `{"task_id":$T,"lease_token":"nope","text":"x"}`, nil},
	"get_output":        {`{"task_id":$T,"limit":1001}`, []string{"task", "logs", "$T", "--limit", "1001"}, `{"task_id":$T}`, []string{"task", "logs", "$T"}},
	"add_evidence":      {`{"task_id":$T,"lease_token":"nope","kind":"log","body":"b"}`, nil, `{"task_id":$T,"lease_token":"nope","kind":"log","body":"b"}`, nil},
	"record_decision":   {`{"task_id":$T,"lease_token":"nope","kind":"k","derived_from_revision":1}`, nil, `{"task_id":$T,"lease_token":"nope","kind":"k","derived_from_revision":1}`, nil},
	"reuse_workspace":   {`{"task_id":$T,"lease_token":"nope","path":"/w","derived_from_revision":1}`, nil, `{"task_id":$T,"lease_token":"nope","path":"/w","derived_from_revision":1}`, nil},
	"confirm_abort":     {`{"task_id":$T,"lease_token":""}`, nil, `{"task_id":$T,"lease_token":"nope"}`, nil},
	"complete_task":     {`{"task_id":$T,"lease_token":"nope"}`, nil, `{"task_id":$T,"lease_token":"nope"}`, nil},
	"fail_task":         {`{"task_id":$T,"lease_token":"nope"}`, nil, `{"task_id":$T,"lease_token":"nope"}`, nil},
	"request_input":     {`{"task_id":$T,"lease_token":"nope","question":" "}`, nil, `{"task_id":$T,"lease_token":"nope","question":"q"}`, nil},
	"claim_review":      {`{"task_id":$T,"lease_s":-1}`, nil, `{"task_id":$T}`, nil},
	"approve_review":    {`{"task_id":$T,"lease_token":"nope"}`, nil, `{"task_id":$T,"lease_token":"nope"}`, nil},
	"reject_review":     {`{"task_id":$T,"lease_token":"nope"}`, nil, `{"task_id":$T,"lease_token":"nope"}`, nil},
	"list_agents":       {`{"bogus":1}`, nil, `{}`, []string{"sweeper", "list"}},
	"agent_status":      {`{"agent_id":"nope"}`, []string{"sweeper", "status", "nope"}, `{"agent_id":"lease_reaper"}`, []string{"sweeper", "status", "lease_reaper"}},
	"start_agent":       {`{"agent_id":"nope"}`, []string{"sweeper", "start", "nope"}, `{"agent_id":"lease_reaper"}`, []string{"sweeper", "start", "lease_reaper"}},
	"stop_agent":        {`{"agent_id":"nope"}`, []string{"sweeper", "stop", "nope"}, `{"agent_id":"lease_reaper"}`, []string{"sweeper", "stop", "lease_reaper"}},
	"pause_type":        {`{"type":"bad type"}`, []string{"type", "pause", "bad type"}, `{"type":"build","reason":"r"}`, []string{"type", "pause", "build", "--reason", "r"}},
	"resume_type":       {`{"type":""}`, []string{"type", "resume", ""}, `{"type":"build"}`, []string{"type", "resume", "build"}},
	"list_paused_types": {`{"bogus":1}`, nil, `{}`, []string{"type", "paused"}},
	"set_limit": {`{"name":"openai","pattern":"open*ai","max_running":2}`, []string{"limit", "set", "openai", "--pattern", "open*ai", "--max-running", "2"},
		`{"name":"openai","pattern":"openai:*","max_running":2}`, []string{"limit", "set", "openai", "--pattern", "openai:*", "--max-running", "2"}},
	"list_limits":          {`{"bogus":1}`, nil, `{}`, []string{"limit", "list"}},
	"get_usage":            {`{"since":"0s"}`, []string{"usage", "show", "--since", "0s"}, `{"by":["model"]}`, []string{"usage", "--by", "model"}},
	"report_usage":         {`{"task_id":$T,"lease_token":"nope","cost":"1e3"}`, nil, `{"task_id":$T,"lease_token":"nope","cost":"0.01"}`, nil},
	"delete_limit":         {`{"name":"a/b"}`, []string{"limit", "delete", "a/b"}, `{"name":"openai"}`, []string{"limit", "delete", "openai"}},
	"submit_research":      {`{"question":"  "}`, []string{"research", "  "}, `{"question":"why?"}`, []string{"research", "why?"}},
	"list_objects":         {`{"limit":5000}`, []string{"object", "list", "--limit", "5000"}, `{}`, []string{"object", "list"}},
	"get_object":           {`{"object_id":0}`, []string{"object", "show", "0"}, `{"object_id":$O}`, []string{"object", "show", "$O"}},
	"list_object_versions": {`{"object_id":0}`, []string{"object", "versions", "0"}, `{"object_id":$O}`, []string{"object", "versions", "$O"}},
	"write_object_version": {`{"object_id":$O,"base_version":0,"content":{}}`, []string{"object", "edit", "$O", "--base", "0", "--content", "{}"},
		`{"object_id":$O,"base_version":1,"content":{}}`, []string{"object", "edit", "$O", "--base", "1", "--content", "{}"}},
	"create_token": {`{"name":"x"}`, []string{"token", "create", "--name", "x"}, `{"name":"x","grants":[{"resource":"/","permission":"read"}]}`,
		[]string{"token", "create", "--name", "x", "--grant", "read:/"}},
	"list_tokens":    {`{"bogus":1}`, nil, `{}`, []string{"token", "list"}},
	"list_sessions":  {`{"bogus":1}`, nil, `{}`, []string{"session", "list"}},
	"revoke_session": {`{"id":"no-such-session"}`, []string{"session", "revoke", "no-such-session"}, `{"id":"no-such-session"}`, []string{"session", "revoke", "no-such-session"}},
	"check_stored":   {`{"what":"rows"}`, nil, `{"what":"tasks"}`, []string{"doctor"}},
	"create_schedule": {`{"name":"s","cron":"61 * * * *","task":{"type":"t"}}`, []string{"schedule", "create", "s", "61 * * * *", "--task", `{"type":"t"}`},
		`{"name":"s","cron":"@hourly","task":{"type":"t"}}`, []string{"schedule", "create", "s", "@hourly", "--task", `{"type":"t"}`}},
	"list_schedules":   {`{"bogus":1}`, nil, `{}`, []string{"schedule", "list"}},
	"get_schedule":     {`{"name":"a b"}`, []string{"schedule", "show", "a b"}, `{"name":"s"}`, []string{"schedule", "show", "s"}},
	"pause_schedule":   {`{"name":"a b"}`, []string{"schedule", "pause", "a b"}, `{"name":"s"}`, []string{"schedule", "pause", "s"}},
	"resume_schedule":  {`{"name":"no-such-schedule"}`, []string{"schedule", "resume", "no-such-schedule"}, `{"name":"s"}`, []string{"schedule", "resume", "s"}},
	"trigger_schedule": {`{"name":"a/b"}`, nil, `{"name":"s"}`, []string{"schedule", "trigger", "s"}},
	"delete_schedule":  {`{"name":"no-such-schedule"}`, []string{"schedule", "delete", "no-such-schedule"}, `{"name":"s"}`, []string{"schedule", "delete", "s"}},
	"revoke_token":     {`{"id":"no-such-principal"}`, []string{"token", "revoke", "no-such-principal"}, `{"id":"no-such-principal"}`, []string{"token", "revoke", "no-such-principal"}},
}

// parityHub is one hub's HTTP API with every operation and /mcp, in this
// process, over store s.
type parityHub struct {
	url      string
	admin    string // admin on /
	store    *backend.Backend
	task     int64 // an OPEN task
	canceled int64
	object   int64
}

func newParityHub(t *testing.T, s *backend.Backend, c clock.Clock) *parityHub {
	t.Helper()
	ctx := context.Background()
	rt, err := hub.NewRuntime(s, hub.RuntimeConfig{Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	// The sweepers' passes run on the maintenance leader: this fixture's
	// runtime, which is not started as a whole, takes part in the election.
	if err := rt.Leader.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	live := liveness.NewService(s.Driver(), c)
	svc := &ops.Services{Liveness: live, Tasks: s.Tasks, Objects: s.Objects, Sweepers: rt.Sweepers, Principals: s.Principals,
		Schedules: s.Schedules, Clock: c}
	a := api.New(api.Config{Services: &ops.Services{Liveness: live, Tasks: s.Tasks, Objects: s.Objects, Sweepers: rt.Sweepers, Clock: c,
		Principals: s.Principals, Schedules: s.Schedules}, MCP: mcpserver.HTTPHandler(mcpserver.NewServer("test", svc)), Version: "test"})
	srv := httptest.NewServer(a)
	t.Cleanup(func() { a.CloseStreams(); srv.Close(); rt.Stop(context.Background()) })
	h := &parityHub{url: srv.URL, store: s}
	_, h.admin = token(t, s, c, cks.Grant{Resource: "/", Permission: auth.PermAdmin})
	h.task = backendtest.MustEnqueue(t, s, cks.NewTask{Type: "t", Title: "open"}).ID
	h.canceled = backendtest.MustEnqueue(t, s, cks.NewTask{Type: "t", Title: "gone"}).ID
	if _, err := s.Tasks.Cancel(ctx, h.canceled, "op", "gone"); err != nil {
		t.Fatal(err)
	}
	h.object = backendtest.MustCreateObject(t, s.Objects, knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"v":1}`), CreatedBy: "op"}).ID
	return h
}

func token(t *testing.T, s *backend.Backend, c clock.Clock, grants ...cks.Grant) (cks.Principal, string) {
	t.Helper()
	p, tok, err := auth.CreateToken(context.Background(), s.Principals, c, "p", grants)
	if err != nil {
		t.Fatal(err)
	}
	return p, tok
}

// expand fills in the ids of the hub's fixtures.
func (h *parityHub) expand(s string) string {
	return strings.NewReplacer("$T", fmt.Sprint(h.task), "$C", fmt.Sprint(h.canceled), "$O", fmt.Sprint(h.object)).Replace(s)
}

// overHTTP calls op with input as token and returns the error answered.
func (h *parityHub) overHTTP(t *testing.T, tok string, op ops.Operation, input string) (int, cks.Error) {
	t.Helper()
	method, path, body, err := ops.HTTPRequest(op, json.RawMessage(input))
	if err != nil {
		t.Fatalf("%s %s: %v", op.Spec().Name, input, err)
	}
	req, _ := http.NewRequest(method, h.url+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e cks.ErrorBody
	if resp.StatusCode < 400 || json.Unmarshal(b, &e) != nil || e.Error.Message == "" {
		t.Fatalf("%s %s %s: %d %s, want an error answer", op.Spec().Name, method, path, resp.StatusCode, b)
	}
	return resp.StatusCode, e.Error
}

// overMCP calls tool name with the arguments input as token and returns the
// tool error's text.
func (h *parityHub) overMCP(t *testing.T, tok, name, input string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "parity", Version: "v0"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: h.url + "/mcp", MaxRetries: -1, HTTPClient: &http.Client{Transport: bearerAuth(tok)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(input)})
	if err != nil || !res.IsError || len(res.Content) != 1 {
		t.Fatalf("%s %s over MCP: %v %+v, want a tool error", name, input, err, res)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// bearerAuth adds a bearer token to every request.
type bearerAuth string

func (b bearerAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// overCLI runs `cks ARGS --url … --token …` in this process and returns its
// exit status and stderr.
func (h *parityHub) overCLI(t *testing.T, tok string, args ...string) (int, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	full := append(append([]string(nil), args...), "--url", h.url, "--token", tok)
	code := run(context.Background(), full, env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }})
	return code, stderr.String()
}

// TestParity walks the operations table. For each operation it sends one
// input the operation refuses over HTTP, over MCP (an MCP operation) and
// through the CLI — `cks api NAME INPUT`, and the operation's own command
// where it has one and can say that input — and wants the same words from
// each: the HTTP answer's message is the MCP tool error's text, and the CLI
// prints it as it is. Then a principal holding every permission but the
// operation's (on /) sends a valid input on each surface and is refused
// with the same message, which names the operation's permission and
// resource: the table alone decides. Both backends.
func TestParity(t *testing.T) {
	for _, op := range ops.All() {
		if _, ok := parityCases[op.Spec().Name]; !ok && !op.Spec().Stream {
			t.Errorf("operation %s has no parity case", op.Spec().Name)
		}
	}
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		h := newParityHub(t, s, c)
		before := backendtest.State(t, s, sweeper.LeaseReaperID)
		for _, op := range ops.All() {
			sp := op.Spec()
			pc, ok := parityCases[sp.Name]
			if !ok {
				continue
			}
			t.Run(sp.Name, func(t *testing.T) {
				input := h.expand(pc.invalid)
				status, f := h.overHTTP(t, h.admin, op, input)
				cli := fmt.Sprintf("cks: %s\n", &cks.Error{Status: status, Code: f.Code, Message: f.Message})
				if sp.Surfaces&ops.MCP != 0 {
					if got := h.overMCP(t, h.admin, sp.Name, input); got != f.Message {
						t.Errorf("%s: MCP says %q, HTTP %q", input, got, f.Message)
					}
				}
				if code, got := h.overCLI(t, h.admin, "api", sp.Name, input); code != 1 || got != cli {
					t.Errorf("cks api %s %s: exit %d %q, want 1 %q", sp.Name, input, code, got, cli)
				}
				if pc.invalidCLI != nil {
					// The command's words are the hub's, but for the field it
					// blames, which the command names by its flag.
					args := expandAll(h, pc.invalidCLI)
					want := cli
					if fl := flagOf(args, f.Field); fl != "" {
						want = strings.Replace(cli, "invalid "+f.Field+":", "invalid --"+fl+":", 1)
					}
					if code, got := h.overCLI(t, h.admin, args...); code != 1 || got != want {
						t.Errorf("cks %q: exit %d %q, want 1 %q (as HTTP and MCP)", args, code, got, want)
					}
				}
				if sp.Surfaces&ops.CLI != 0 && pc.validCLI == nil {
					t.Errorf("%s has a command of its own, but no parity case for it", sp.Name)
				}

				// Without the operation's permission: the same refusal, from
				// the table, everywhere.
				var grants []cks.Grant
				for _, p := range auth.Permissions {
					if p != sp.Permission && p != auth.PermAdmin {
						grants = append(grants, cks.Grant{Resource: "/", Permission: p})
					}
				}
				_, tok := token(t, s, c, grants...)
				valid := h.expand(pc.valid)
				status, f = h.overHTTP(t, tok, op, valid)
				if status != http.StatusForbidden || f.Code != "forbidden" || !strings.Contains(f.Message, "needs "+sp.Permission+" on ") {
					t.Fatalf("%s %s without %s: %d %+v, want 403 naming %s", sp.Name, valid, sp.Permission, status, f, sp.Permission)
				}
				if sp.Surfaces&ops.MCP != 0 {
					if got := h.overMCP(t, tok, sp.Name, valid); got != f.Message {
						t.Errorf("without %s: MCP says %q, HTTP %q", sp.Permission, got, f.Message)
					}
				}
				cli = fmt.Sprintf("cks: %s\n", &cks.Error{Status: http.StatusForbidden, Code: cks.CodeForbidden, Message: f.Message})
				if code, got := h.overCLI(t, tok, "api", sp.Name, valid); code != 1 || got != cli {
					t.Errorf("cks api %s without %s: exit %d %q, want 1 %q", sp.Name, sp.Permission, code, got, cli)
				}
				if pc.validCLI != nil {
					args := expandAll(h, pc.validCLI)
					if code, got := h.overCLI(t, tok, args...); code != 1 || got != cli {
						t.Errorf("cks %q without %s: exit %d %q, want 1 %q", args, sp.Permission, code, got, cli)
					}
				}
			})
		}
		// Refused calls change nothing (the tokens the test made aside).
		after := backendtest.State(t, s, sweeper.LeaseReaperID)
		delete(before, "principals")
		delete(after, "principals")
		backendtest.DiffState(t, "the refused calls of the parity walk", before, after)
		if got, err := s.Tasks.GetTask(context.Background(), h.task); err != nil || got.State != cks.TaskOpen {
			t.Errorf("the OPEN task after the walk: %v %v", got.State, err)
		}
	})
}

// flagOf is the flag of the command args name (`task stop …`) that reads
// input field field, or "" when none does (a positional argument, a
// command of its own).
func flagOf(args []string, field string) string {
	for _, g := range commandGroups() {
		words := strings.Fields(g.name) // task bulk: a group's group
		for _, c := range g.commands {
			if c.sub != nil || len(args) <= len(words) || !slices.Equal(args[:len(words)], words) ||
				c.name != args[len(words)] || field == "" {
				continue
			}
			for name, p := range bindInput(flag.NewFlagSet("", flag.ContinueOnError), c.op, c.in).flags {
				if p.field == field {
					return name
				}
			}
		}
	}
	return ""
}

func expandAll(h *parityHub, args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = h.expand(a)
	}
	return out
}

// TestAPICommand: `cks api NAME INPUT` prints the operation's output as
// JSON (INPUT "-" is read from stdin), `cks api --list` lists every
// operation, and an unknown name, a stream or input that is not JSON is a
// usage error.
func TestAPICommand(t *testing.T) {
	s := backendtest.SQLite(t)(t)
	c := clock.NewFake(backendtest.T0)
	h := newParityHub(t, s, c)
	cli := func(stdin string, args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		full := append(append([]string(nil), args...), "--url", h.url, "--token", h.admin)
		code := run(context.Background(), full, env{stdin: strings.NewReader(stdin), stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }})
		return code, stdout.String(), stderr.String()
	}
	var got cks.Task
	code, out, errOut := cli("", "api", "get_task", fmt.Sprintf(`{"task_id":%d}`, h.task))
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.ID != h.task || got.State != cks.TaskOpen {
		t.Fatalf("api get_task: exit %d %s %s", code, out, errOut)
	}
	var created cks.CreatedTask
	code, out, errOut = cli(`{"type":"from-stdin","title":"piped"}`, "api", "create_task", "-")
	if code != 0 || json.Unmarshal([]byte(out), &created) != nil || !created.Created || created.Task.Type != "from-stdin" {
		t.Fatalf("api create_task -: exit %d %s %s", code, out, errOut)
	}
	code, out, _ = cli("", "api", "--list")
	for _, op := range ops.All() {
		if !strings.Contains(out, op.Spec().Name) {
			t.Errorf("api --list does not list %s", op.Spec().Name)
		}
	}
	if code != 0 {
		t.Errorf("api --list: exit %d", code)
	}
	for _, args := range [][]string{{"api", "no_such_op"}, {"api", "events"}, {"api", "get_task", "{nope"}, {"api"}} {
		if code, _, errOut := cli("", args...); code != 2 {
			t.Errorf("%q: exit %d %q, want a usage error", args, code, errOut)
		}
	}
}
