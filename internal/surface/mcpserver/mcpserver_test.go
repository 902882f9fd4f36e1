package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is one MCP server over a fresh SQLite store with a fake clock at T0.
type env struct {
	store *backend.Backend
	clock *clock.Fake
	srv   *mcp.Server
}

func newEnv(t testing.TB) *env {
	t.Helper()
	st, err := backend.Open(ctx(t), filepath.Join(t.TempDir(), "cks.db"))
	if err != nil {
		t.Fatalf("backend.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	clk := clock.NewFake(backendtest.T0)
	return &env{store: st, clock: clk, srv: mcpserver.NewServer("v-test", &ops.Services{Liveness: liveness.NewService(st.Driver(), clk)})}
}

func ctx(t testing.TB) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func newClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "cks-test", Version: "v0"}, nil)
}

// connectInMemory connects an SDK client to srv over in-memory transports.
func connectInMemory(t testing.TB, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	// In memory, as over stdio, the client is the local operator (admin).
	ss, err := srv.Connect(auth.WithLocalOperator(ctx(t)), st, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	cs, err := newClient().Connect(ctx(t), ct, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// call calls a tool and fails the test on a protocol error.
func call(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx(t), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s, %v): protocol error %v", name, args, err)
	}
	return res
}

// text returns the text of a result's first content, which must be text;
// any other content must be a resource link (to what the answer names).
func text(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatalf("got no content, want a text first")
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want *mcp.TextContent", res.Content[0])
	}
	for _, c := range res.Content[1:] {
		if _, ok := c.(*mcp.ResourceLink); !ok {
			t.Fatalf("content after the text is %T, want only resource links", c)
		}
	}
	return tc.Text
}

// decode checks that a successful result carries structured content and the
// same JSON as its one text content, and decodes it into out.
func decode(t testing.TB, res *mcp.CallToolResult, out any) {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", text(t, res))
	}
	structured, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatalf("marshal structured content: %v", err)
	}
	var a, b any
	if err := json.Unmarshal(structured, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(text(t, res)), &b); err != nil {
		t.Fatalf("text content is not JSON: %v", err)
	}
	if ja, jb := mustJSON(t, a), mustJSON(t, b); ja != jb {
		t.Fatalf("text content differs from structured content:\n text: %s\nstructured: %s", jb, ja)
	}
	if err := json.Unmarshal(structured, out); err != nil {
		t.Fatalf("decode %s: %v", structured, err)
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func schemaOf(t testing.TB, v any) *jsonschema.Schema {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(mustJSON(t, v)), &s); err != nil {
		t.Fatalf("schema: %v", err)
	}
	return &s
}

func TestToolsList(t *testing.T) {
	t.Parallel()
	cs := connectInMemory(t, newEnv(t).srv)
	if got := cs.InitializeResult().ServerInfo; got == nil || got.Name != "cks" || got.Version != "v-test" {
		t.Errorf("server info = %+v, want name cks version v-test", got)
	}
	res, err := cs.ListTools(ctx(t), nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	tools := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		tools[tool.Name] = tool
	}
	tests := []struct {
		name     string
		required []string
		props    []string
		control  bool // a control tool, not a read-only one
		report   bool // report_process: it writes its caller's own row
	}{
		{name: "list_processes"},
		{name: "process_status", required: []string{"process_kind"}, props: []string{"process_kind"}},
		{name: "request_process_stop", required: []string{"process_kind"}, props: []string{"process_kind"}, control: true},
		{name: "report_process", required: []string{"process_kind", "instance_id"}, props: []string{"process_kind", "instance_id"}, report: true},
	}
	if len(tools) != len(tests) {
		t.Errorf("got %d tools, want %d", len(tools), len(tests))
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tool := tools[tc.name]
			if tool == nil {
				t.Fatalf("tool %s missing", tc.name)
			}
			wants := []string{"3 × liveness_interval_s", `"alive"`, `"stopped"`}
			switch {
			case tc.control:
				wants = []string{"finish its current task", "exit", "There is no start", `{"found": false}`, `"stopped"`}
			case tc.report:
				wants = []string{"3 × liveness_interval_s", `"stop_requested"`, "exited true", "Only the principal that made"}
			}
			for _, want := range wants {
				if !strings.Contains(tool.Description, want) {
					t.Errorf("description lacks %q: %s", want, tool.Description)
				}
			}
			if readOnly := !tc.control && !tc.report; tool.Annotations == nil || tool.Annotations.ReadOnlyHint != readOnly {
				t.Errorf("annotations = %+v, want read-only %v", tool.Annotations, readOnly)
			}
			in := schemaOf(t, tool.InputSchema)
			if in.Type != "object" {
				t.Errorf("input schema type = %q, want object", in.Type)
			}
			if !slices.Equal(in.Required, tc.required) {
				t.Errorf("input schema requires %v, want %v", in.Required, tc.required)
			}
			for _, p := range tc.props {
				if in.Properties[p] == nil || in.Properties[p].Type != "string" || in.Properties[p].Description == "" {
					t.Errorf("input property %s = %+v, want a described string", p, in.Properties[p])
				}
			}
			if out := schemaOf(t, tool.OutputSchema); out.Type != "object" {
				t.Errorf("output schema type = %q, want object", out.Type)
			}
		})
	}
	for _, kind := range liveness.KnownKinds() {
		for _, name := range []string{"process_status", "list_processes"} {
			if !strings.Contains(tools[name].Description, kind) {
				t.Errorf("%s description does not name kind %s", name, kind)
			}
		}
	}
}

func TestListProcessesTTL(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cs := connectInMemory(t, e.srv)
	row := backendtest.Liveness("i-1", "critic", 0) // interval 30 s, heartbeat at T0
	task := int64(7)
	row.CurrentTaskID, row.CurrentTaskType = &task, "research"
	backendtest.MustUpsert(t, e.store, row)
	ttl := time.Duration(liveness.TTLFactor*row.LivenessIntervalS) * time.Second

	tests := []struct {
		name    string
		elapsed time.Duration
		want    cks.ProcessStatus
	}{
		{"at heartbeat", 0, cks.ProcessAlive},
		{"exactly 3x interval", ttl, cks.ProcessAlive},
		{"1us past 3x interval", ttl + time.Microsecond, cks.ProcessStopped},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.clock.Set(backendtest.T0.Add(tc.elapsed))
			var got cks.ProcessList
			decode(t, call(t, cs, "list_processes", nil), &got)
			if len(got.Processes) != 1 {
				t.Fatalf("got %d processes, want 1: %+v", len(got.Processes), got)
			}
			p := got.Processes[0]
			backendtest.EqualLiveness(t, p.AgentLiveness, row)
			if p.Status != tc.want {
				t.Errorf("status = %q, want %q", p.Status, tc.want)
			}
			if p.HeartbeatAgeS != tc.elapsed.Seconds() {
				t.Errorf("heartbeat_age_s = %v, want %v", p.HeartbeatAgeS, tc.elapsed.Seconds())
			}
		})
	}
}

func TestListProcessesEmpty(t *testing.T) {
	t.Parallel()
	res := call(t, connectInMemory(t, newEnv(t).srv), "list_processes", map[string]any{})
	if got := text(t, res); got != `{"processes":[]}` {
		t.Errorf("text = %s, want {\"processes\":[]}", got)
	}
}

func TestProcessStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cs := connectInMemory(t, e.srv)
	old := backendtest.Liveness("critic-old", "critic", 0)
	old.LastHeartbeatAt = backendtest.T0.Add(10 * time.Minute) // heartbeats later than newer, still not "current"
	backendtest.MustUpsert(t, e.store, old)
	backendtest.MustUpsert(t, e.store, backendtest.Liveness("critic-new", "critic", time.Minute))
	backendtest.MustUpsert(t, e.store, backendtest.Liveness("pipe-1", "pipeline", 0))
	e.clock.Set(backendtest.T0.Add(2 * time.Minute))

	tests := []struct {
		name       string
		args       map[string]any
		wantID     string
		wantStatus cks.ProcessStatus
		wantErr    []string // substrings of the tool error; nil means success
	}{
		{name: "newest started wins", args: map[string]any{"process_kind": "critic"}, wantID: "critic-new", wantStatus: cks.ProcessAlive},
		{name: "stopped", args: map[string]any{"process_kind": "pipeline"}, wantID: "pipe-1", wantStatus: cks.ProcessStopped},
		{name: "known kind never reported", args: map[string]any{"process_kind": "enrichment"}, wantStatus: cks.ProcessNotFound},
		{name: "any kind may report", args: map[string]any{"process_kind": "janitor"}, wantStatus: cks.ProcessNotFound},
		{name: "no kind", args: map[string]any{"process_kind": "jani tor"}, wantErr: []string{"process_kind", "a process kind"}},
		{name: "missing argument", args: map[string]any{}, wantErr: []string{"process_kind"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, cs, "process_status", tc.args)
			if tc.wantErr != nil {
				if !res.IsError {
					t.Fatalf("IsError = false, want a tool error; result %s", text(t, res))
				}
				msg := text(t, res)
				for _, want := range tc.wantErr {
					if !strings.Contains(msg, want) {
						t.Errorf("tool error %q does not mention %q", msg, want)
					}
				}
				return
			}
			var got cks.Process
			decode(t, res, &got)
			if got.InstanceID != tc.wantID || got.Status != tc.wantStatus || got.ProcessKind != tc.args["process_kind"] {
				t.Errorf("got %s/%s/%s, want %s/%s/%s", got.ProcessKind, got.InstanceID, got.Status,
					tc.args["process_kind"], tc.wantID, tc.wantStatus)
			}
		})
	}
}

func TestStreamableHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	row := backendtest.Liveness("i-http", "exec", 0)
	backendtest.MustUpsert(t, e.store, row)
	admin := cks.Principal{ID: "admin", Name: "admin", CreatedAt: backendtest.T0}
	if err := e.store.Principals.CreatePrincipal(ctx(t), admin, "hash", []cks.Grant{{Resource: "/", Permission: auth.PermAdmin}}); err != nil {
		t.Fatal(err)
	}
	authz := e.store.Principals
	h := mcpserver.HTTPHandler(e.srv)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), authz, admin)))
	}))
	t.Cleanup(hs.Close)

	tests := []struct {
		name    string
		version string // client protocol version; "" is the SDK's latest
	}{
		{"latest protocol", ""},
		{"initialize handshake 2025-11-25", "2025-11-25"},
		{"initialize handshake 2025-03-26", "2025-03-26"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := newClient().Connect(ctx(t), &mcp.StreamableClientTransport{Endpoint: hs.URL, MaxRetries: -1},
				&mcp.ClientSessionOptions{ProtocolVersion: tc.version})
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer cs.Close()
			var got cks.ProcessList
			decode(t, call(t, cs, "list_processes", nil), &got)
			if len(got.Processes) != 1 || got.Processes[0].InstanceID != row.InstanceID || got.Processes[0].Status != cks.ProcessAlive {
				t.Fatalf("processes = %+v, want %s alive", got.Processes, row.InstanceID)
			}
			if res := call(t, cs, "process_status", map[string]any{"process_kind": "no/pe"}); !res.IsError {
				t.Errorf("no kind over HTTP: IsError = false")
			}
		})
	}
}

// TestServeStdio runs ServeStdio on pipes swapped in for stdin and stdout, so
// it must not run in parallel with anything.
func TestServeStdio(t *testing.T) {
	tests := []struct {
		name string
		stop func(cancel context.CancelFunc, cs *mcp.ClientSession)
	}{
		{"client disconnects", func(_ context.CancelFunc, cs *mcp.ClientSession) { cs.Close() }},
		{"context ends", func(cancel context.CancelFunc, _ *mcp.ClientSession) { cancel() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			backendtest.MustUpsert(t, e.store, backendtest.Liveness("i-stdio", "critic", 0))
			serverIn, clientOut := pipe(t)
			clientIn, serverOut := pipe(t)
			stdin, stdout := os.Stdin, os.Stdout
			os.Stdin, os.Stdout = serverIn, serverOut
			t.Cleanup(func() { os.Stdin, os.Stdout = stdin, stdout })

			sctx, cancel := context.WithCancel(ctx(t))
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- mcpserver.ServeStdio(sctx, e.srv) }()

			cs, err := newClient().Connect(ctx(t), &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			var got cks.ProcessList
			decode(t, call(t, cs, "list_processes", nil), &got)
			if len(got.Processes) != 1 || got.Processes[0].InstanceID != "i-stdio" {
				t.Fatalf("processes = %+v, want i-stdio", got.Processes)
			}
			tc.stop(cancel, cs)
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("ServeStdio = %v, want nil", err)
				}
			case <-ctx(t).Done():
				t.Fatal("ServeStdio did not return")
			}
			serverOut.Close() // the transport never closes stdout; the client sees EOF
			cs.Close()
		})
	}
}

func pipe(t testing.TB) (*os.File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}
