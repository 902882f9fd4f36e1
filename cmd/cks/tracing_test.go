package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/backend/backendtest"
)

// TestExecAgentTraces (both backends): a `cks serve` and a `cks agent
// exec` both given the standard OTEL_* variables of a real OpenTelemetry
// Collector (tools/otelcol) trace one task across the two processes. The
// task created with a traceparent gets the hub's create_task span; the
// agent, which claims and ends the attempt through its own ledger, hands
// its command the attempt's context as TRACEPARENT — in the task's trace,
// not the caller's span — and records the attempt span with that very id,
// a child of the caller's span, Ok, once it exits.
func TestExecAgentTraces(t *testing.T) {
	rec := backendtest.StartReceiver(t)
	forBackends(t, func(t *testing.T, db testDB) {
		const (
			traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
			spanID  = "00f067aa0ba902b7"
		)
		otel := func(service string) []string {
			return []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=" + rec.Endpoint, "OTEL_SERVICE_NAME=" + service}
		}
		hubService, agentService := "cks-hub-"+db.backend, "cks-agent-"+db.backend
		h := startHubEnv(t, "serve", otel(hubService), "--database", db.url)
		api := client.New(h.url, h.token)
		created, _, err := api.CreateTask(t.Context(), cks.NewTask{Type: "traced", Title: "t", Traceparent: "00-" + traceID + "-" + spanID + "-01"})
		if err != nil {
			t.Fatal(err)
		}
		a := startAgent(t, otel(agentService), append([]string{"exec", "--database", db.url, "--types", "traced"},
			append(fastAgent, "--", "sh", "-c", `printf %s "$TRACEPARENT"`)...)...)
		done := waitState(t, api, created.ID, cks.TaskCompleted)
		tp, err := cks.ParseTraceparent("traceparent", done.Result)
		if err != nil || fmt.Sprintf("%x", tp.TraceID) != traceID || fmt.Sprintf("%x", tp.SpanID) == spanID {
			t.Fatalf("the command's TRACEPARENT %q (%v): want the attempt's span in the task's trace", done.Result, err)
		}
		a.cmd.Process.Signal(syscall.SIGTERM)
		if code := a.wait(t); code != 0 {
			t.Fatalf("agent exit %d\n%s", code, a.stderr.String())
		}
		var attempt, create []backendtest.Span
		waitFor(t, "the agent's attempt span and the hub's create_task span at the receiver", func() bool {
			attempt, create = nil, nil
			for _, s := range rec.Spans(t, agentService) {
				if s.Name == "attempt" && s.Attr("cks.task.id") == fmt.Sprint(created.ID) {
					attempt = append(attempt, s)
				}
			}
			for _, s := range rec.Spans(t, hubService) {
				if s.Name == "create_task" && s.Attr("cks.task.id") == fmt.Sprint(created.ID) {
					create = append(create, s)
				}
			}
			return len(attempt) > 0 && len(create) > 0
		})
		s := attempt[0]
		if len(attempt) != 1 || s.TraceID != traceID || s.ParentSpanID != spanID || s.SpanID != fmt.Sprintf("%x", tp.SpanID) ||
			s.Status.Code != 1 || !strings.HasPrefix(s.Attr("cks.agent"), "exec") {
			t.Errorf("the agent's attempt spans %+v: want one, %x under %s in %s, Ok, claimed by the exec agent", attempt, tp.SpanID, spanID, traceID)
		}
		if c := create[0]; c.TraceID != traceID || c.ParentSpanID != spanID {
			t.Errorf("the hub's create_task span %+v: want it under %s in %s", c, spanID, traceID)
		}
	})
}
