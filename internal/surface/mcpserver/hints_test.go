package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/hub"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// TestIdempotentHintsHold (issue 37, finding 9): a tool hinted idempotent
// answers a repeat of a call, with the same arguments, as it answered the
// call — so a client that repeats a call whose answer it lost (the MCP
// meaning of the hint) is not told it failed. Every such tool that is not
// read-only has a case here; one without is a failure (add the case, or
// drop the hint). And the tools that end or interrupt work — stop_task,
// bulk_stop_tasks, request_process_stop, cancel_task — are hinted
// destructive.
func TestIdempotentHintsHold(t *testing.T) {
	e := newEnv(t)
	rt := startRuntime(t, e, hub.RuntimeConfig{})
	srv := mcpserver.NewServer("v", &ops.Services{Liveness: liveness.NewService(e.store.Driver(), e.clock), Tasks: e.store.Tasks,
		Objects: e.store.Objects, Sweepers: rt.Sweepers, Principals: e.store.Principals, Schedules: e.store.Schedules, Clock: e.clock})
	cs := connectInMemory(t, srv)
	claimed := func(typ string) cks.ClaimedTask {
		t.Helper()
		if _, _, err := e.store.Tasks.Enqueue(ctx(t), cks.NewTask{Type: typ, Title: typ}); err != nil {
			t.Fatal(err)
		}
		c, err := e.store.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "w", Types: []string{typ}, N: 1, Lease: time.Hour})
		if err != nil || len(c) != 1 {
			t.Fatalf("claim: %v %v", c, err)
		}
		return c[0]
	}
	cases := map[string]func() map[string]any{
		mcpserver.ToolTouchTask: func() map[string]any {
			c := claimed("touch")
			return map[string]any{"task_id": c.ID, "lease_token": c.LeaseToken}
		},
		mcpserver.ToolRequestProcessStop: func() map[string]any {
			backendtest.MustUpsert(t, e.store, backendtest.Liveness("i-stop", "exec", 0))
			return map[string]any{"process_kind": "exec"}
		},
		mcpserver.ToolStartAgent: func() map[string]any { return map[string]any{"agent_id": "lease_reaper"} },
		mcpserver.ToolPauseType:  func() map[string]any { return map[string]any{"type": "held", "reason": "provider down"} },
		mcpserver.ToolReportProcess: func() map[string]any {
			return map[string]any{"process_kind": "summarize", "instance_id": "i-report", "current_task_id": 3, "current_task_type": "summarize"}
		},
		mcpserver.ToolMarkRunning: func() map[string]any {
			c := claimed("run")
			return map[string]any{"task_id": c.ID, "lease_token": c.LeaseToken}
		},
		mcpserver.ToolConfirmAbort: func() map[string]any {
			c := claimed("abort")
			if _, err := e.store.Tasks.StopTask(ctx(t), ledger.StopParams{ID: c.ID, Actor: "op", Reason: "hold", Deadline: time.Minute}); err != nil {
				t.Fatal(err)
			}
			return map[string]any{"task_id": c.ID, "lease_token": c.LeaseToken}
		},
		mcpserver.ToolStopAgent: func() map[string]any { return map[string]any{"agent_id": "stale_stop_report"} },
		mcpserver.ToolPauseSchedule: func() map[string]any {
			if _, err := e.store.Schedules.Create(ctx(t), cks.NewSchedule{Name: "to-pause", Cron: "@hourly", Task: cks.ScheduleTask{Type: "t"}}); err != nil {
				t.Fatal(err)
			}
			return map[string]any{"name": "to-pause"}
		},
		mcpserver.ToolResumeSchedule: func() map[string]any {
			if _, err := e.store.Schedules.Create(ctx(t), cks.NewSchedule{Name: "to-resume", Cron: "@hourly", Paused: true,
				Task: cks.ScheduleTask{Type: "t"}}); err != nil {
				t.Fatal(err)
			}
			return map[string]any{"name": "to-resume"}
		},
	}
	tools, err := cs.ListTools(ctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		a := tool.Annotations
		if a == nil || a.ReadOnlyHint || !a.IdempotentHint {
			continue
		}
		args, ok := cases[tool.Name]
		if !ok {
			t.Errorf("%s is hinted idempotent: add its case here, or drop the hint", tool.Name)
			continue
		}
		t.Run(tool.Name, func(t *testing.T) {
			in := args()
			first, again := answer(t, cs, tool.Name, in), answer(t, cs, tool.Name, in)
			if first != again {
				t.Fatalf("%s(%v) answered\n%s\nthen\n%s", tool.Name, in, first, again)
			}
		})
	}
	for _, name := range []string{"stop_task", "bulk_stop_tasks", "request_process_stop", "cancel_task", "update_task"} {
		for _, tool := range tools.Tools {
			if tool.Name == name && (tool.Annotations.DestructiveHint == nil || !*tool.Annotations.DestructiveHint) {
				t.Errorf("%s: destructiveHint %v, want true (it ends or interrupts work)", name, tool.Annotations.DestructiveHint)
			}
		}
	}
}

// answer calls tool with args and returns its answer, times and a
// sweeper's run count and recent passes left out (a repeat happens later,
// and a started sweeper passes in the background meanwhile); a tool error
// fails t.
func answer(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res := call(t, cs, tool, args)
	if res.IsError {
		t.Fatalf("%s(%v): %s", tool, args, text(t, res))
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(text(t, res)), &v); err != nil {
		t.Fatal(err)
	}
	for k := range v {
		if strings.HasSuffix(k, "_at") || strings.HasPrefix(k, "last_") || k == "run_count" || k == "recent_passes" {
			delete(v, k)
		}
	}
	return fmt.Sprint(v)
}
