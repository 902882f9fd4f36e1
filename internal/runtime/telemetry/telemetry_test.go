package telemetry_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/runtime/telemetry"
	"github.com/cks-dev/cks/internal/service/ledger"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// counting is an Observer that counts what it is told.
type counting struct{ claims, ends int }

func (c *counting) Claimed(cl []ledger.Claim)           { c.claims += len(cl) }
func (c *counting) AttemptsEnded(e []ledger.AttemptEnd) { c.ends += len(e) }
func (c *counting) UsageReported(cks.Usage)             {}

// TestOffIsNothing: with tracing off (the default) Start hands back the
// hub's observer itself — no Tracer, so the ledger keeps no created tasks
// and computes no attempt context, and no exporter or goroutine exists
// (goleak) — and a claim's traceparent is the task's own.
func TestOffIsNothing(t *testing.T) {
	next := &counting{}
	for _, cfg := range []config.Tracing{{}, config.DefaultHub().Tracing} {
		obs, shutdown, err := telemetry.Start(context.Background(), cfg, next, nil)
		if err != nil || obs != ledger.Observer(next) {
			t.Fatalf("Start(%+v) = %T, %v; want the observer given", cfg, obs, err)
		}
		if _, ok := obs.(ledger.Tracer); ok {
			t.Fatal("off, the observer is a Tracer")
		}
		if err := shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		st.Tasks.ObserveWith(next)
		const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		backendtest.MustEnqueue(t, st, cks.NewTask{Title: "t", Traceparent: tp})
		got, err := st.Tasks.Claim(context.Background(), ledger.ClaimParams{Worker: "w", N: 1, Lease: time.Hour})
		if err != nil || len(got) != 1 || got[0].Traceparent != tp {
			t.Fatalf("claim: %+v, %v; want the task's traceparent", got, err)
		}
	})
}

// TestSpansOfALedger (both backends): a Tracer over a ledger records a
// create_task span per created task and an attempt span per ended attempt,
// whose id is the one the claim handed the executor, in the task's trace,
// the child of the task's traceparent (else of its create_task span), with
// the claim and the end as its times and the outcome as its status; the
// observer under it is told of the claims and ends too.
func TestSpansOfALedger(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		exp := tracetest.NewInMemoryExporter()
		next := &counting{}
		tr, err := telemetry.NewTracer(exp, "test", next)
		if err != nil {
			t.Fatal(err)
		}
		st.Tasks.ObserveWith(tr)
		ctx := context.Background()
		const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		given := backendtest.MustEnqueue(t, st, cks.NewTask{Type: "a", Title: "t", Traceparent: tp, ConcurrencyKeys: []string{"k1"}})
		plain := backendtest.MustEnqueue(t, st, cks.NewTask{Type: "b", Title: "t"})
		claimed := map[int64]cks.ClaimedTask{}
		for _, typ := range []string{"a", "b"} {
			got, err := st.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w-" + typ, Types: []string{typ}, N: 1, Lease: time.Hour})
			if err != nil || len(got) != 1 {
				t.Fatalf("claim %s: %v, %v", typ, got, err)
			}
			claimed[got[0].ID] = got[0]
		}
		if _, err := st.Tasks.Complete(ctx, given.ID, claimed[given.ID].LeaseToken, false, "ok"); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Tasks.Fail(ctx, plain.ID, claimed[plain.ID].LeaseToken, false, "broken"); err != nil {
			t.Fatal(err)
		}
		if err := tr.ForceFlush(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
		if next.claims != 2 || next.ends != 2 {
			t.Errorf("the observer under the tracer was told of %d claims and %d ends, want 2 and 2", next.claims, next.ends)
		}
		spans := exp.GetSpans()
		if len(spans) != 4 {
			t.Fatalf("%d spans, want 4: %+v", len(spans), spans)
		}
		var creates = map[int64]tracetest.SpanStub{}
		for _, s := range spans {
			if s.Name == telemetry.SpanCreate {
				for _, a := range s.Attributes {
					if a.Key == telemetry.AttrTaskID {
						creates[a.Value.AsInt64()] = s
					}
				}
			}
		}
		for _, s := range spans {
			if s.Name != telemetry.SpanAttempt {
				continue
			}
			var id int64
			for _, a := range s.Attributes {
				if a.Key == telemetry.AttrTaskID {
					id = a.Value.AsInt64()
				}
			}
			ct := claimed[id]
			want, err := cks.ParseTraceparent("traceparent", ct.Traceparent)
			if err != nil {
				t.Fatal(err)
			}
			if s.SpanContext.TraceID() != want.TraceID || s.SpanContext.SpanID() != want.SpanID {
				t.Errorf("task %d's attempt span %v, but the claim handed %s", id, s.SpanContext, ct.Traceparent)
			}
			if !s.StartTime.Equal(ct.ClaimedAt) || s.EndTime.Before(s.StartTime) {
				t.Errorf("task %d's attempt from %v to %v; want from its claim %v", id, s.StartTime, s.EndTime, ct.ClaimedAt)
			}
			switch id {
			case given.ID:
				if s.Parent.SpanID().String() != "00f067aa0ba902b7" || s.Status.Code != codes.Ok {
					t.Errorf("the traced task's attempt: parent %v status %v; want the traceparent's span, Ok", s.Parent, s.Status)
				}
				if c := creates[id]; c.Parent.SpanID().String() != "00f067aa0ba902b7" || c.SpanContext.TraceID() != want.TraceID {
					t.Errorf("the traced task's create_task: %v under %v", c.SpanContext, c.Parent)
				}
			case plain.ID:
				c := creates[id]
				if c.Parent.IsValid() || s.Parent.SpanID() != c.SpanContext.SpanID() || c.SpanContext.TraceID() != want.TraceID {
					t.Errorf("the untraced task: create_task %v under %v, attempt under %v; want the create a root, the attempt its child",
						c.SpanContext, c.Parent, s.Parent)
				}
				if s.Status.Code != codes.Error || s.Status.Description != "failed: broken" {
					t.Errorf("the failed attempt's status %+v", s.Status)
				}
			}
		}
	})
}
