package mcpserver_test

// FuzzToolArguments calls every MCP tool with arbitrary JSON arguments, as the
// local operator (admin) or as a reader, against a fresh task in a state the
// input picks: never a panic, the session survives whatever was sent, and a
// call that fails (a tool error or a protocol error) changed nothing in the
// database: what it could have written, every table but those the process
// writes in the background (backendtest.Records, on a connection of its
// own).
//
// Arguments may name the fresh task as $ID and an existing object as $OBJ.
//
// Run with: go test -run '^$' -fuzz '^FuzzToolArguments$' -fuzztime 30s -parallel 1 ./internal/surface/mcpserver

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
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
	"github.com/cks-dev/cks/internal/runtime/pipeline"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// fuzzTools is every tool the hub serves, in a fixed order.
var fuzzTools = []string{
	mcpserver.ToolListProcesses, mcpserver.ToolProcessStatus, mcpserver.ToolRequestProcessStop, mcpserver.ToolReportProcess,
	mcpserver.ToolListTasks, mcpserver.ToolGetTask, mcpserver.ToolCreateTask, mcpserver.ToolAnswerTask,
	mcpserver.ToolCancelTask, mcpserver.ToolStopTask, mcpserver.ToolStartTask, mcpserver.ToolUpdateTask,
	mcpserver.ToolListAgents, mcpserver.ToolAgentStatus, mcpserver.ToolStartAgent, mcpserver.ToolStopAgent,
	mcpserver.ToolSubmitResearch, mcpserver.ToolGetObject,
}

// The task states a call is made against.
var fuzzStates = []string{"OPEN", "STOPPED", "NEEDS_INPUT", "NEEDS_REVIEW", "COMPLETED", "RUNNING"}

type toolHub struct {
	store    *backend.Backend
	sweepers *sweeper.Controller
	db       *sql.Conn             // read-only, for backendtest.Records
	sessions [2]*mcp.ClientSession // the local operator, a reader
	object   int64
	n        int
}

func newToolHub(tb testing.TB) *toolHub {
	tb.Helper()
	c := context.Background()
	path := filepath.Join(tb.TempDir(), "cks.db")
	clk := clock.NewFake(backendtest.T0)
	st, err := backend.Open(c, path, driver.WithClock(clk))
	if err != nil {
		tb.Fatal(err)
	}
	rt, err := hub.NewRuntime(st, hub.RuntimeConfig{Clock: clk})
	if err != nil {
		tb.Fatal(err)
	}
	// The sweepers' passes run on the maintenance leader: this fixture's
	// runtime, which is not started as a whole, takes part in the election.
	if err := rt.Leader.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	srv := mcpserver.NewServer("fuzz", &ops.Services{Liveness: liveness.NewService(st.Driver(), clk)})
	mcpserver.Register(srv, &ops.Services{Tasks: st.Tasks})
	mcpserver.Register(srv, &ops.Services{Sweepers: rt.Sweepers})
	mcpserver.Register(srv, &ops.Services{Objects: st.Objects})
	reader, _, err := auth.CreateToken(c, st.Principals, clk, "reader", []cks.Grant{{Permission: auth.PermRead, Resource: auth.ResourceRoot}})
	if err != nil {
		tb.Fatal(err)
	}
	h := &toolHub{store: st, sweepers: rt.Sweepers}
	var closers []func()
	for i, sctx := range []context.Context{auth.WithLocalOperator(c), auth.WithPrincipal(c, st.Principals, reader)} {
		sT, cT := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(sctx, sT, nil)
		if err != nil {
			tb.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "fuzz", Version: "v0"}, nil).Connect(c, cT, nil)
		if err != nil {
			tb.Fatal(err)
		}
		h.sessions[i] = cs
		closers = append(closers, func() { cs.Close(); ss.Wait() })
	}
	o, err := pipeline.Submit(c, st.Objects, pipeline.Question{Question: "Which tool wins?"}, "fuzz")
	if err != nil {
		tb.Fatal(err)
	}
	h.object = o.ID
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		tb.Fatal(err)
	}
	if h.db, err = db.Conn(c); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		for _, f := range closers {
			f()
		}
		h.db.Close()
		db.Close()
		rt.Stop(context.Background())
		st.Close()
	})
	return h
}

// task creates a task in state (a name of fuzzStates) and returns its id and
// lease token (of a RUNNING task).
func (h *toolHub) task(t testing.TB, state string) (int64, string) {
	t.Helper()
	c := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("set up a %s task: %v", state, err)
		}
	}
	h.n++
	typ := fmt.Sprintf("fuzz-%d", h.n)
	tk, _, err := h.store.Tasks.Enqueue(c, cks.NewTask{Type: typ, Title: "fuzz target"})
	must(err)
	if state == "OPEN" {
		return tk.ID, ""
	}
	if state == "STOPPED" {
		_, err := h.store.Tasks.StopTask(c, ledger.StopParams{ID: tk.ID, Actor: "fuzz", Reason: "held", Deadline: cks.DefaultAbortDeadline})
		must(err)
		return tk.ID, ""
	}
	ts, err := h.store.Tasks.Claim(c, ledger.ClaimParams{Worker: "fuzz-worker", Types: []string{typ}, N: 1, Lease: time.Hour})
	must(err)
	if len(ts) != 1 {
		t.Fatalf("set up a %s task: claimed %d", state, len(ts))
	}
	lease := ts[0].LeaseToken
	_, err = h.store.Tasks.MarkRunning(c, tk.ID, lease)
	must(err)
	switch state {
	case "NEEDS_INPUT":
		_, err = h.store.Tasks.RequestInput(c, tk.ID, lease, "which?")
	case "NEEDS_REVIEW", "COMPLETED":
		_, err = h.store.Tasks.Complete(c, tk.ID, lease, state == "NEEDS_REVIEW", "done")
	}
	must(err)
	return tk.ID, lease
}

// confirmer confirms the abort of lease on task id as soon as one is
// requested, so a stop or update that waits returns at once.
func (h *toolHub) confirmer(id int64, lease string) (stop func()) {
	c, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.store.Changes.WatchChanges(c, []string{cks.TopicTaskAborts}, func(string) { //nolint:errcheck // ends with c
			if _, err := h.store.Tasks.ConfirmAbort(c, id, lease); err == nil {
				cancel()
			}
		})
	}()
	return func() { cancel(); <-done }
}

// list is the JSON list of n copies of item: a seed at or past a list's
// bound (cks.MaxAddChildren, …), which is refused before it is decoded.
func list(item string, n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
}

func FuzzToolArguments(f *testing.F) {
	seeds := map[string][]string{
		mcpserver.ToolProcessStatus:      {`{"process_kind":"critic"}`, `{"process_kind":""}`},
		mcpserver.ToolRequestProcessStop: {`{"process_kind":"exec"}`, `{"process_kind":"a/b"}`},
		mcpserver.ToolReportProcess: {`{"process_kind":"summarize","instance_id":"i-1","task_types":["summarize"]}`,
			`{"process_kind":"summarize","instance_id":"i 1"}`, `{"process_kind":"summarize","instance_id":"i-2","liveness_interval_s":1e9}`,
			`{"process_kind":"summarize","instance_id":"i-3","current_task_type":"t"}`},
		mcpserver.ToolListTasks: {`{}`, `{"state":["open"],"type":["t"],"cursor":1,"limit":1000}`, `{"limit":-1}`, `{"limit":0}`,
			`{"sort":"priority","cursor_key":"5"}`, `{"parent_id":$ID,"limit":2}`, `{"parent_id":$ID,"sort":"-id"}`,
			`{"state":` + list(`"OPEN"`, cks.MaxNames+1) + `}`, `{"type":` + list(`"t"`, cks.MaxNames) + `}`},
		mcpserver.ToolGetTask: {`{"task_id":$ID}`},
		mcpserver.ToolCreateTask: {`{"type":"t","payload":{"a":[1]},"priority":3,"parent_id":$ID,"depends_on":[$ID]}`,
			`{"type":"t","dedupe_key":"k"}`},
		mcpserver.ToolAnswerTask: {`{"task_id":$ID,"text":"this"}`},
		mcpserver.ToolCancelTask: {`{"task_id":$ID,"reason":"r"}`},
		mcpserver.ToolStopTask:   {`{"task_id":$ID,"reason":"hold","deadline":"2s","wait":true}`, `{"task_id":$ID,"reason":"hold","deadline":"100us"}`},
		mcpserver.ToolStartTask:  {`{"task_id":$ID,"reason":"go"}`},
		mcpserver.ToolUpdateTask: {`{"task_id":$ID,"title":"t","metadata":{"k":1},"add_children":[{"type":"c","payload":[1]}]}`,
			`{"task_id":$ID,"description":"d","deadline":"1s"}`,
			`{"task_id":$ID,"add_children":` + list(`1`, 200_000) + `}`,
			`{"task_id":$ID,"add_children":` + list(`{"type":"c"}`, cks.MaxAddChildren+1) + `}`,
			`{"task_id":$ID,"add_children":[{"type":"c","depends_on":` + list(`$ID`, cks.MaxDependsOn+1) + `}]}`,
			`{"task_id":$ID,"cancel_children":` + list(`$ID`, cks.MaxCancelChildren+1) + `}`,
			`{"task_id":$ID,"add_depends_on":` + list(`$ID`, cks.MaxDependsOn+1) + `}`,
			`{"task_id":$ID,"priority":1001}`},
		mcpserver.ToolAgentStatus:    {`{"agent_id":"lease_reaper"}`},
		mcpserver.ToolStartAgent:     {`{"agent_id":"lease_reaper"}`, `{"agent_id":"nope"}`},
		mcpserver.ToolStopAgent:      {`{"agent_id":"fork_detection"}`},
		mcpserver.ToolSubmitResearch: {`{"question":"why?","corpus":"/srv/c"}`, `{"question":""}`},
		mcpserver.ToolGetObject:      {`{"object_id":$OBJ}`},
	}
	for i, name := range fuzzTools {
		for _, s := range append(seeds[name], `{}`, `null`, `{"task_id":"1"}`, `[]`) {
			f.Add(byte(0), byte(i), byte(0), []byte(s))
		}
	}
	h := newToolHub(f)
	f.Fuzz(func(t *testing.T, who, tool, st byte, args []byte) {
		name := fuzzTools[int(tool)%len(fuzzTools)]
		state := fuzzStates[int(st)%len(fuzzStates)]
		id, lease := h.task(t, state)
		raw := strings.NewReplacer("$ID", strconv.FormatInt(id, 10), "$OBJ", strconv.FormatInt(h.object, 10)).Replace(string(args))
		if !json.Valid([]byte(raw)) {
			return // the client cannot send it
		}
		if lease != "" {
			defer h.confirmer(id, lease)()
		}
		cs := h.sessions[who%2]
		what := fmt.Sprintf("%s(%.300s) as %s (the task %s)", name, raw, []string{"the operator", "a reader"}[who%2], state)
		c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		before := backendtest.Records(t, h.db)
		res, err := cs.CallTool(c, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(raw)})
		failed := err != nil || res.IsError
		if err == nil && len(res.Content) == 0 {
			t.Fatalf("%s: a result without content", what)
		}
		if failed {
			backendtest.DiffState(t, fmt.Sprintf("%s, failed (%v %.200s),", what, err, resultText(res)), before, backendtest.Records(t, h.db))
			if t.Failed() {
				t.FailNow()
			}
		}
		if err == nil && !res.IsError && name == mcpserver.ToolStartAgent {
			// Stop it again, so that no sweeper writes behind later inputs.
			var in struct {
				AgentID string `json:"agent_id"`
			}
			json.Unmarshal([]byte(raw), &in) //nolint:errcheck // it was accepted
			if _, err := h.sweepers.Stop(context.Background(), in.AgentID); err != nil {
				t.Fatalf("stop %q again: %v", in.AgentID, err)
			}
		}
		// Whatever was sent, the session still answers.
		if err := cs.Ping(c, nil); err != nil {
			t.Fatalf("%s: the session no longer answers: %v", what, err)
		}
	})
}

func resultText(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}
