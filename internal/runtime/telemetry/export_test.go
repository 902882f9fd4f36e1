package telemetry

import (
	"context"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/cks-dev/cks/internal/service/ledger"
)

// NewTracer is newTracer, for the tests: a Tracer exporting to exp.
func NewTracer(exp sdktrace.SpanExporter, service string, next ledger.Observer) (*Tracer, error) {
	return newTracer(exp, service, next)
}

// ForceFlush exports the spans t has not yet exported.
func (t *Tracer) ForceFlush(ctx context.Context) error { return t.tp.ForceFlush(ctx) }

// Shutdown is shutdown.
func (t *Tracer) Shutdown(ctx context.Context) error { return t.shutdown(ctx) }
