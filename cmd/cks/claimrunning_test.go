package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
)

// claimRunning claims one task of type typ as worker w, straight into
// RUNNING, through one surface of the hub.
type claimRunning func(t testing.TB, h *parityHub, typ string) cks.ClaimedTasks

// claimRunningSurfaces are claim_tasks with running true over HTTP (the Go
// client), MCP and `cks task claim --running --json`.
var claimRunningSurfaces = map[string]claimRunning{
	"http": func(t testing.TB, h *parityHub, typ string) cks.ClaimedTasks {
		out, err := client.New(h.url, h.admin).ClaimWith(context.Background(),
			cks.ClaimTasksInput{Worker: "w", Types: cks.Names{typ}, Running: true})
		if err != nil {
			t.Fatal(err)
		}
		return out
	},
	"mcp": func(t testing.TB, h *parityHub, typ string) cks.ClaimedTasks {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "claim", Version: "v0"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: h.url + "/mcp", MaxRetries: -1, HTTPClient: &http.Client{Transport: bearerAuth(h.admin)}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "claim_tasks",
			Arguments: map[string]any{"worker": "w", "types": typ, "running": true}})
		if err != nil || res.IsError {
			t.Fatalf("claim_tasks over MCP: %v %+v", err, res)
		}
		var out cks.ClaimedTasks
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out
	},
	"cli": func(t testing.TB, h *parityHub, typ string) cks.ClaimedTasks {
		var stdout, stderr bytes.Buffer
		args := []string{"task", "claim", "--worker", "w", "--types", typ, "--running", "--json", "--url", h.url, "--token", h.admin}
		if code := run(context.Background(), args, env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr,
			getenv: func(string) string { return "" }}); code != 0 {
			t.Fatalf("cks %q: exit %d: %s", args, code, stderr.String())
		}
		var out cks.ClaimedTasks
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			t.Fatalf("cks %q printed %q: %v", args, stdout.String(), err)
		}
		return out
	},
}

// TestClaimRunningEverySurface: on both backends, claim_tasks with running
// true, over HTTP, MCP and the CLI, hands back the task RUNNING with its
// lease token, started at the claim; the task reads RUNNING with a
// heartbeat that holds, and its history is the one of a task claimed and
// then marked running at the same instants, while it runs and once it is
// completed (the event that ends the attempt records the same start).
func TestClaimRunningEverySurface(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		h := newParityHub(t, s, c)
		ctx := backendtest.Ctx(t)
		for name, claim := range claimRunningSurfaces {
			t.Run(name, func(t *testing.T) {
				typ, ref := "run-"+name, "ref-"+name
				want := backendtest.MustEnqueue(t, s, cks.NewTask{Type: typ, Title: "claimed running"})
				refTask := backendtest.MustEnqueue(t, s, cks.NewTask{Type: ref, Title: "claimed running"})
				c.Advance(time.Second)
				// The reference: claimed, then marked running, at one instant.
				rc := backendtest.ClaimType(t, s, "w", ref)
				if _, err := s.Tasks.MarkRunning(ctx, rc.ID, rc.LeaseToken); err != nil {
					t.Fatal(err)
				}
				out := claim(t, h, typ)
				if len(out.Tasks) != 1 || out.Tasks[0].ID != want.ID {
					t.Fatalf("claimed %+v, want task %d", out.Tasks, want.ID)
				}
				ct := out.Tasks[0]
				if ct.State != cks.TaskRunning || ct.LeaseToken == "" || ct.ClaimedBy != "w" || ct.Attempts != 1 ||
					!ct.StateChangedAt.Equal(ct.ClaimedAt) || out.AgentTokens[fmt.Sprint(ct.ID)] == "" {
					t.Fatalf("claimed %+v (agent tokens %v), want RUNNING for w, started at the claim, with its tokens", ct, out.AgentTokens)
				}
				if res, err := s.Tasks.Heartbeat(ctx, ct.ID, ct.LeaseToken); err != nil || !res.Held {
					t.Fatalf("the claim's lease: held %v, %v", res.Held, err)
				}
				sameHistory(t, s.Tasks, ct.ID, refTask.ID, cks.TaskRunning)

				c.Advance(time.Second)
				if _, err := s.Tasks.Complete(ctx, ct.ID, ct.LeaseToken, false, "done"); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Tasks.Complete(ctx, rc.ID, rc.LeaseToken, false, "done"); err != nil {
					t.Fatal(err)
				}
				sameHistory(t, s.Tasks, ct.ID, refTask.ID, cks.TaskCompleted)
			})
		}
	})
}

// sameHistory fails t unless task id, in state st, has the history of task
// ref but for the ids.
func sameHistory(t testing.TB, s interface {
	GetTask(ctx context.Context, id int64) (cks.Task, error)
}, id, ref int64, st cks.TaskState) {
	t.Helper()
	events := func(id int64) []string {
		task, err := s.GetTask(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if task.State != st {
			t.Fatalf("task %d is %s, want %s", id, task.State, st)
		}
		var out []string
		for _, e := range task.Events {
			out = append(out, fmt.Sprintf("%s %s→%s by %s attempt %d (%s)", e.At.Format(time.RFC3339Nano), e.From, e.To, e.Actor, e.Attempt, e.Reason))
		}
		return out
	}
	got, want := events(id), events(ref)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("history of the task claimed running:\n%s\nwant, as claim and mark_running:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
