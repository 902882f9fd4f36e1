package telemetry_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cks-dev/cks/internal/runtime/telemetry"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// BenchmarkTracedTask is what tracing adds to one task's path through a
// hub, on the goroutines of its writes: the Tracer told of its creation,
// its claim's context computed (AttemptTraceparent) and its attempt's end
// recorded, the spans handed to the batch processor (an exporter that
// discards them: the export runs on the processor's goroutine). Off, the
// ledger calls none of it (TestOffIsNothing).
func BenchmarkTracedTask(b *testing.B) {
	for _, withParent := range []bool{false, true} {
		name := "no traceparent"
		tp := ""
		if withParent {
			name, tp = "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		}
		b.Run(name, func(b *testing.B) {
			tr, err := telemetry.NewTracer(tracetest.NewNoopExporter(), "bench", nil)
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Shutdown(context.Background()) //nolint:errcheck // a benchmark
			t0 := time.Now()
			b.ReportAllocs()
			for i := range b.N {
				id := int64(i + 1)
				tr.Created([]ledger.Created{{ID: id, Type: "build", At: t0, Traceparent: tp, CreatedBy: "admin", Keys: `["openai"]`}})
				a := ledger.Attempt{ID: id, Attempt: 1, Agent: "w", ClaimedAt: t0.Add(time.Millisecond), CreatedAt: t0, Traceparent: tp, Keys: `["openai"]`}
				if tr.AttemptTraceparent(ledger.Claim{Attempt: a, Type: "build"}) == "" {
					b.Fatal("no traceparent")
				}
				tr.AttemptsEnded([]ledger.AttemptEnd{{Attempt: a, Type: "build", Outcome: ledger.OutcomeCompleted, Took: time.Millisecond}})
			}
		})
	}
}
