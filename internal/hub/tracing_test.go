package hub_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/hub"
	"github.com/cks-dev/cks/internal/waitfor"
)

// TestTracesReachARealReceiver (both backends): a hub with tracing on,
// exporting to a real OpenTelemetry Collector, traces the tasks it is
// given: create_task takes a traceparent from the header or the body (a
// bad one, or a header and a body that disagree, is a 400 naming
// traceparent), get_task shows it, and each claim hands the executor the
// attempt's context in that trace. The receiver gets a create_task span
// and an attempt span per attempt, with the task's trace id, the right
// parent (the caller's span, or the task's create_task span when the task
// came with no traceparent), the task's attributes and the outcome as
// status: a completed attempt Ok; a retried one Error with a retry event,
// then the retry's own attempt; a stopped one an abort event.
func TestTracesReachARealReceiver(t *testing.T) {
	rec := backendtest.StartReceiver(t)
	for name, db := range hubDatabases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			service := "cks-trace-test-" + name
			set := config.DefaultHub()
			set.Ledger.RetryBackoff = 0
			set.Tracing = config.Tracing{Enabled: true, Endpoint: rec.Endpoint, ServiceName: service}
			h := runHub(t, hub.Config{DatabaseURL: db(t), Settings: set})

			const (
				traceA = "4bf92f3577b34da6a3ce929d0e0e4736"
				spanA  = "00f067aa0ba902b7"
				traceB = "0af7651916cd43dd8448eb211c80319c"
				spanB  = "b7ad6b7169203331"
			)
			post := func(path, body string, header map[string]string, out any) int {
				t.Helper()
				req, _ := http.NewRequest("POST", h.url+path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+h.token)
				req.Header.Set("Content-Type", "application/json")
				for k, v := range header {
					req.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				if out != nil {
					_ = json.NewDecoder(resp.Body).Decode(out)
				}
				return resp.StatusCode
			}
			create := func(typ, body string, header map[string]string) cks.Task {
				t.Helper()
				var out struct{ Task cks.Task }
				if st := post("/v1/tasks", body, header, &out); st != http.StatusCreated {
					t.Fatalf("create %s: %d", typ, st)
				}
				return out.Task
			}
			claim := func(typ string) cks.ClaimedTask {
				t.Helper()
				var out cks.ClaimedTasks
				if st := post("/v1/tasks/claim", fmt.Sprintf(`{"types":[%q],"n":1,"lease_s":60,"worker":"agent-7"}`, typ), nil, &out); st != http.StatusOK || len(out.Tasks) != 1 {
					t.Fatalf("claim %s: %d %+v", typ, st, out)
				}
				return out.Tasks[0]
			}
			end := func(ct cks.ClaimedTask, verb, rest string) {
				t.Helper()
				if st := post(fmt.Sprintf("/v1/tasks/%d/%s", ct.ID, verb), fmt.Sprintf(`{"lease_token":%q%s}`, ct.LeaseToken, rest), nil, nil); st != http.StatusOK {
					t.Fatalf("%s %d: %d", verb, ct.ID, st)
				}
			}

			// Bad input: a 400 naming traceparent, and no task.
			for _, c := range []struct {
				body   string
				header map[string]string
			}{
				{`{"type":"bad","title":"x","traceparent":"00-xyz-01"}`, nil},
				{`{"type":"bad","title":"x"}`, map[string]string{"traceparent": "00-" + traceA + "-0000000000000000-01"}},
				{`{"type":"bad","title":"x","traceparent":"00-` + traceA + `-` + spanA + `-01"}`,
					map[string]string{"traceparent": "00-" + traceB + "-" + spanB + "-01"}},
			} {
				var e struct {
					Error struct{ Field string }
				}
				if st := post("/v1/tasks", c.body, c.header, &e); st != http.StatusBadRequest || e.Error.Field != "traceparent" {
					t.Errorf("create %s with header %v: %d %+v, want 400 naming traceparent", c.body, c.header, st, e)
				}
			}

			// A: the header's traceparent; completed.
			a := create("alpha", `{"type":"alpha","title":"a"}`, map[string]string{"traceparent": "00-" + traceA + "-" + spanA + "-01"})
			if a.Traceparent != "00-"+traceA+"-"+spanA+"-01" {
				t.Fatalf("task A's traceparent = %q", a.Traceparent)
			}
			var got cks.Task
			if st := h.call(t, "GET", fmt.Sprintf("/v1/tasks/%d", a.ID), "", &got); st != http.StatusOK || got.Traceparent != a.Traceparent {
				t.Fatalf("get_task A: %d traceparent %q", st, got.Traceparent)
			}
			ca := claim("alpha")
			tpA, err := cks.ParseTraceparent("traceparent", ca.Traceparent)
			if err != nil || fmt.Sprintf("%x", tpA.TraceID) != traceA || fmt.Sprintf("%x", tpA.SpanID) == spanA {
				t.Fatalf("claim of A: traceparent %q (%v): want the attempt's span in A's trace", ca.Traceparent, err)
			}
			end(ca, "complete", `,"result":"done"`)

			// B: the body's traceparent, keyed; fails retryably, then
			// completes on its second attempt.
			b := create("beta", `{"type":"beta","title":"b","max_attempts":2,"concurrency_keys":["openai"],"traceparent":"00-`+traceB+`-`+spanB+`-01"}`, nil)
			cb1 := claim("beta")
			end(cb1, "fail", `,"retryable":true,"reason":"flaky upstream"`)
			cb2 := claim("beta")
			if cb2.Traceparent == cb1.Traceparent || !strings.Contains(cb2.Traceparent, traceB) {
				t.Fatalf("the retry's traceparent %q: want another span of B's trace than %q", cb2.Traceparent, cb1.Traceparent)
			}
			end(cb2, "complete", "")

			// C: no traceparent; stopped while it runs.
			c := create("gamma", `{"type":"gamma","title":"c"}`, nil)
			if c.Traceparent != "" {
				t.Fatalf("task C's traceparent = %q, want none", c.Traceparent)
			}
			cc := claim("gamma")
			if st := post(fmt.Sprintf("/v1/tasks/%d/stop", c.ID), `{"reason":"operator says no","wait":false}`, nil, nil); st != http.StatusOK {
				t.Fatalf("stop C: %d", st)
			}
			tpC, err := cks.ParseTraceparent("traceparent", cc.Traceparent)
			if err != nil {
				t.Fatalf("claim of C: traceparent %q: %v", cc.Traceparent, err)
			}

			// Stopping the hub flushes its spans.
			if err := h.stop(); err != nil {
				t.Fatal(err)
			}
			var spans []backendtest.Span
			want := 7 // 3 creates, 4 attempts
			waitfor.Until(t, "the receiver to hold the hub's spans", func() bool {
				spans = rec.Spans(t, service)
				return len(spans) >= want
			})
			byName := func(name, taskID string) []backendtest.Span {
				var out []backendtest.Span
				for _, s := range spans {
					if s.Name == name && s.Attr("cks.task.id") == taskID {
						out = append(out, s)
					}
				}
				return out
			}
			id := func(n int64) string { return fmt.Sprint(n) }
			check := func(what string, s backendtest.Span, trace, parent string) {
				t.Helper()
				if s.TraceID != trace || s.ParentSpanID != parent {
					t.Errorf("%s: trace %s parent %s; want trace %s parent %s", what, s.TraceID, s.ParentSpanID, trace, parent)
				}
			}

			createA, attA := byName("create_task", id(a.ID)), byName("attempt", id(a.ID))
			if len(createA) != 1 || len(attA) != 1 {
				t.Fatalf("A's spans: %d create_task, %d attempt; want 1 and 1 (all: %+v)", len(createA), len(attA), spans)
			}
			check("A's create_task", createA[0], traceA, spanA)
			check("A's attempt", attA[0], traceA, spanA)
			if attA[0].SpanID != fmt.Sprintf("%x", tpA.SpanID) {
				t.Errorf("A's attempt span %s, but the claim handed the executor %s", attA[0].SpanID, ca.Traceparent)
			}
			if s := attA[0]; s.Attr("cks.task.type") != "alpha" || s.Attr("cks.task.attempt") != "1" || s.Attr("cks.task.restarts") != "0" ||
				s.Attr("cks.agent") != "agent-7" || s.Attr("cks.attempt.outcome") != "completed" || s.Status.Code != 1 {
				t.Errorf("A's attempt: attributes %+v status %+v; want alpha, attempt 1, restarts 0, agent-7, completed, Ok", s.Attributes, s.Status)
			}

			createB, attB := byName("create_task", id(b.ID)), byName("attempt", id(b.ID))
			if len(createB) != 1 || len(attB) != 2 {
				t.Fatalf("B's spans: %d create_task, %d attempt; want 1 and 2", len(createB), len(attB))
			}
			check("B's create_task", createB[0], traceB, spanB)
			if createB[0].Attr("cks.task.concurrency_keys") != "openai" {
				t.Errorf("B's create_task keys: %q", createB[0].Attr("cks.task.concurrency_keys"))
			}
			var retried, done backendtest.Span
			for _, s := range attB {
				check("B's attempt", s, traceB, spanB)
				switch s.Attr("cks.attempt.outcome") {
				case "retried":
					retried = s
				case "completed":
					done = s
				}
			}
			if retried.Status.Code != 2 || !strings.Contains(retried.Status.Message, "flaky upstream") || retried.Attr("cks.task.attempt") != "1" ||
				len(retried.Events) != 1 || retried.Events[0].Name != "retry" || retried.Attr("cks.task.concurrency_keys") != "openai" {
				t.Errorf("B's retried attempt: %+v; want Error naming the reason, attempt 1, a retry event, key openai", retried)
			}
			if done.Status.Code != 1 || done.Attr("cks.task.attempt") != "2" {
				t.Errorf("B's second attempt: %+v; want Ok, attempt 2", done)
			}

			createC, attC := byName("create_task", id(c.ID)), byName("attempt", id(c.ID))
			if len(createC) != 1 || len(attC) != 1 {
				t.Fatalf("C's spans: %d create_task, %d attempt; want 1 and 1", len(createC), len(attC))
			}
			traceC := fmt.Sprintf("%x", tpC.TraceID)
			check("C's create_task (a root)", createC[0], traceC, "")
			check("C's attempt", attC[0], traceC, createC[0].SpanID)
			if s := attC[0]; s.Attr("cks.attempt.outcome") != "stopped" || len(s.Events) != 1 || s.Events[0].Name != "abort" ||
				s.Attr("cks.attempt.reason") == "" {
				t.Errorf("C's attempt: %+v; want outcome stopped with an abort event and the reason", s)
			}
		})
	}
}
