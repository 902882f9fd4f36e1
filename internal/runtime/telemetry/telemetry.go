// Package telemetry exports the hub's OpenTelemetry traces of the tasks
// (issue 43 item 6; docs/tracing.md): a span for each task's creation and
// one for each attempt, from its claim to its end, exported over OTLP/HTTP
// with the OpenTelemetry Go SDK, configured by the standard OTEL_*
// variables (config.Tracing). Off by default: then Start hands the hub's
// observer back untouched, and no span, exporter or goroutine exists.
//
// The spans are recorded by the ledger's Observer hook, after the commit
// of the write that created, claimed or ended (ledger.Tracer), so a
// rolled-back write records nothing and the hub's transactions wait on no
// exporter. A span's ids are derived from the task (its id, creation time,
// attempt and claim time; ids below), not kept: the hub that ends an
// attempt names the span whose context the claiming hub handed the
// executor, whichever hub that was, and a restart forgets nothing.
package telemetry

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// ScopeName is the instrumentation scope of the hub's spans.
const ScopeName = "github.com/cks-dev/cks"

// The names of the spans.
const (
	SpanCreate  = "create_task"
	SpanAttempt = "attempt"
)

// The attributes of the spans.
const (
	AttrTaskID   = attribute.Key("cks.task.id")
	AttrTaskType = attribute.Key("cks.task.type")
	AttrAttempt  = attribute.Key("cks.task.attempt")
	AttrRestarts = attribute.Key("cks.task.restarts")
	AttrKeys     = attribute.Key("cks.task.concurrency_keys")
	AttrAgent    = attribute.Key("cks.agent")
	AttrCreator  = attribute.Key("cks.task.created_by")
	AttrOutcome  = attribute.Key("cks.attempt.outcome")
	AttrReason   = attribute.Key("cks.attempt.reason")
)

// The events an attempt span may carry: its retry (a retryable failure
// with attempts left: the task is OPEN again after its backoff), its abort
// (an operator's stop or cancel), its timeout (past attempt_timeout) and
// its reclaim (the lease ran out).
const (
	EventRetry   = "retry"
	EventAbort   = "abort"
	EventTimeout = "timeout"
	EventReclaim = "reclaim"
)

// Start is the observer a hub gives its ledger: next (its task metrics)
// alone when tracing is off, with a shutdown that does nothing; else a
// Tracer that tells next what it is told and exports the spans to
// cfg.Endpoint, with a shutdown that flushes them.
func Start(ctx context.Context, cfg config.Tracing, next ledger.Observer, log *slog.Logger) (ledger.Observer, func(context.Context) error, error) {
	if !cfg.Enabled {
		return next, func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(cfg.Endpoint))
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: the OTLP exporter for %s: %w", cfg.Endpoint, err)
	}
	t, err := newTracer(exp, cfg.ServiceName, next)
	if err != nil {
		return nil, nil, err
	}
	if log != nil {
		log.Info("exporting traces", "endpoint", cfg.Endpoint, "service", cfg.ServiceName)
	}
	return t, t.shutdown, nil
}

// Tracer is the ledger.Tracer of a hub that exports traces.
type Tracer struct {
	next ledger.Observer
	tp   *sdktrace.TracerProvider
	tr   trace.Tracer
}

var _ ledger.Tracer = (*Tracer)(nil)

// newTracer is a Tracer exporting to exp (batched) as service, telling
// next (nil: no one) of the claims and attempt ends. The sampler is the
// SDK's, from OTEL_TRACES_SAMPLER (default: parent-based, always on).
func newTracer(exp sdktrace.SpanExporter, service string, next ledger.Observer) (*Tracer, error) {
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(service)))
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithIDGenerator(ids{}))
	return &Tracer{next: next, tp: tp, tr: tp.Tracer(ScopeName)}, nil
}

// shutdown exports the spans not yet exported and stops the exporter.
func (t *Tracer) shutdown(ctx context.Context) error { return t.tp.Shutdown(ctx) }

// Claimed implements ledger.Observer: next is told. The attempt's span is
// recorded at its end, started at its claim.
func (t *Tracer) Claimed(claims []ledger.Claim) {
	if t.next != nil {
		t.next.Claimed(claims)
	}
}

// UsageReported implements ledger.Observer: next is told (a report is
// no span).
func (t *Tracer) UsageReported(u cks.Usage) {
	if t.next != nil {
		t.next.UsageReported(u)
	}
}

// Created implements ledger.Tracer: a create_task span for each task, from
// its created_at to now (the commit), a child of the task's traceparent
// when it has one, else the root of the task's own trace.
func (t *Tracer) Created(tasks []ledger.Created) {
	now := time.Now()
	for _, c := range tasks {
		tc := contextOf(c.ID, c.At, c.Traceparent)
		ctx := tc.parentOfCreate()
		ctx = pin(ctx, tc.trace, createSpanID(c.ID, c.At))
		attrs := []attribute.KeyValue{AttrTaskID.Int64(c.ID), AttrTaskType.String(c.Type), AttrCreator.String(c.CreatedBy)}
		if keys := ledger.ConcurrencyKeys(c.Keys); len(keys) > 0 {
			attrs = append(attrs, AttrKeys.StringSlice(keys))
		}
		_, span := t.tr.Start(ctx, SpanCreate, trace.WithTimestamp(c.At), trace.WithAttributes(attrs...))
		end := now
		if end.Before(c.At) {
			end = c.At // a clock that runs behind the database's
		}
		span.End(trace.WithTimestamp(end))
	}
}

// AttemptTraceparent implements ledger.Tracer: the context of the attempt
// span that AttemptsEnded records for c's attempt.
func (t *Tracer) AttemptTraceparent(c ledger.Claim) string {
	tc := contextOf(c.ID, c.CreatedAt, c.Traceparent)
	return cks.Traceparent{TraceID: tc.trace, SpanID: attemptSpanID(c.Attempt), Flags: tc.flags}.String()
}

// AttemptsEnded implements ledger.Observer: next is told, and an attempt
// span is recorded for each end, from the claim to now, a child of the
// task's traceparent (else of its create_task span), with the task's
// attributes, the outcome as its status and an event for a retry, an
// abort, a timeout or a reclaim.
func (t *Tracer) AttemptsEnded(ends []ledger.AttemptEnd) {
	if t.next != nil {
		t.next.AttemptsEnded(ends)
	}
	for _, e := range ends {
		tc := contextOf(e.ID, e.CreatedAt, e.Traceparent)
		ctx := pin(tc.parentOfAttempt(), tc.trace, attemptSpanID(e.Attempt))
		attrs := []attribute.KeyValue{AttrTaskID.Int64(e.ID), AttrTaskType.String(e.Type), AttrAttempt.Int(e.Attempt.Attempt),
			AttrRestarts.Int(e.Restarts), AttrAgent.String(e.Agent), AttrOutcome.String(string(e.Outcome))}
		if keys := ledger.ConcurrencyKeys(e.Keys); len(keys) > 0 {
			attrs = append(attrs, AttrKeys.StringSlice(keys))
		}
		if e.Reason != "" {
			attrs = append(attrs, AttrReason.String(e.Reason))
		}
		_, span := t.tr.Start(ctx, SpanAttempt, trace.WithTimestamp(e.ClaimedAt), trace.WithAttributes(attrs...))
		end := e.ClaimedAt.Add(e.Took) // the ending write's time
		code, event := statusOf(e.Outcome)
		span.SetStatus(code, statusText(code, e))
		if event != "" {
			span.AddEvent(event, trace.WithTimestamp(end),
				trace.WithAttributes(AttrOutcome.String(string(e.Outcome)), AttrReason.String(e.Reason)))
		}
		span.End(trace.WithTimestamp(end))
	}
}

// statusOf is the span status of an attempt that ended with o, and the
// event that says how, if any: Ok for the outcomes the executor finished
// (completed, a review or a question asked); Error for a failure, a retry,
// a timeout and a reclaim; Unset for an attempt ended from outside or
// given back (a stop, a cancel, a requeue), which is no failure of its own.
func statusOf(o ledger.Outcome) (codes.Code, string) {
	switch o {
	case ledger.OutcomeCompleted, ledger.OutcomeNeedsReview, ledger.OutcomeNeedsInput:
		return codes.Ok, ""
	case ledger.OutcomeFailed:
		return codes.Error, ""
	case ledger.OutcomeRetried:
		return codes.Error, EventRetry
	case ledger.OutcomeTimedOut:
		return codes.Error, EventTimeout
	case ledger.OutcomeReclaimed:
		return codes.Error, EventReclaim
	case ledger.OutcomeStopped, ledger.OutcomeCancelled:
		return codes.Unset, EventAbort
	}
	return codes.Unset, ""
}

// statusText is the description of an Error status: the outcome and the
// reason (a status other than Error has none).
func statusText(code codes.Code, e ledger.AttemptEnd) string {
	if code != codes.Error {
		return ""
	}
	if e.Reason == "" {
		return string(e.Outcome)
	}
	return string(e.Outcome) + ": " + e.Reason
}

// taskContext is the trace a task's spans are in.
type taskContext struct {
	trace trace.TraceID
	flags byte
	// given is the task's traceparent's span, when it has one.
	given trace.SpanID
	// create is the task's create_task span.
	create trace.SpanID
}

// contextOf is the trace of the task id created at created with
// traceparent tp: tp's, else one derived from the task.
func contextOf(id int64, created time.Time, tp string) taskContext {
	tc := taskContext{flags: 1, create: createSpanID(id, created)}
	if p, err := cks.ParseTraceparent("traceparent", tp); err == nil {
		tc.trace, tc.given, tc.flags = p.TraceID, p.SpanID, p.Flags
		return tc
	}
	copy(tc.trace[:], derive("trace", id, created.UnixNano()))
	return tc
}

// parentOfCreate is the context the create_task span starts in: the
// task's traceparent's span, else none (a root).
func (tc taskContext) parentOfCreate() context.Context {
	if !tc.given.IsValid() {
		return context.Background()
	}
	return trace.ContextWithRemoteSpanContext(context.Background(), tc.remote(tc.given))
}

// parentOfAttempt is the context an attempt span starts in: the task's
// traceparent's span, else its create_task span.
func (tc taskContext) parentOfAttempt() context.Context {
	parent := tc.given
	if !parent.IsValid() {
		parent = tc.create
	}
	return trace.ContextWithRemoteSpanContext(context.Background(), tc.remote(parent))
}

// remote is the span context of span in tc's trace.
func (tc taskContext) remote(span trace.SpanID) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tc.trace, SpanID: span,
		TraceFlags: trace.TraceFlags(tc.flags), Remote: true})
}

// createSpanID is the id of the create_task span of the task id created
// at created.
func createSpanID(id int64, created time.Time) trace.SpanID {
	var s trace.SpanID
	copy(s[:], derive("create", id, created.UnixNano()))
	return s
}

// attemptSpanID is the id of the span of attempt a: its task, the task's
// creation, its attempt and restart count and its claim.
func attemptSpanID(a ledger.Attempt) trace.SpanID {
	var s trace.SpanID
	copy(s[:], derive("attempt", a.ID, a.CreatedAt.UnixNano(), int64(a.Attempt), int64(a.Restarts), a.ClaimedAt.UnixNano()))
	return s
}

// derive is 16 bytes of the SHA-256 of kind and parts: ids no two tasks
// or attempts share but by a hash collision, and never all zero in
// practice (a zero result is made non-zero).
func derive(kind string, parts ...int64) []byte {
	h := sha256.New()
	h.Write([]byte("cks " + kind))
	var b [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(b[:], uint64(p))
		h.Write(b[:])
	}
	sum := h.Sum(nil)[:16]
	if sum[0] == 0 {
		sum[0] = 1 // neither id may be all zero
	}
	return sum
}

// pinKey is the context key of the ids the next span started in the
// context gets (ids).
type pinKey struct{}

type pinned struct {
	trace trace.TraceID
	span  trace.SpanID
}

// pin makes the span started in ctx have ids tid and sid.
func pin(ctx context.Context, tid trace.TraceID, sid trace.SpanID) context.Context {
	return context.WithValue(ctx, pinKey{}, pinned{trace: tid, span: sid})
}

// ids is the tracer's IDGenerator: the pinned ids of the context, else
// random ones.
type ids struct{}

// NewIDs implements sdktrace.IDGenerator.
func (ids) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if p, ok := ctx.Value(pinKey{}).(pinned); ok {
		return p.trace, p.span
	}
	var tid trace.TraceID
	var sid trace.SpanID
	_, _ = rand.Read(tid[:])
	_, _ = rand.Read(sid[:])
	return tid, sid
}

// NewSpanID implements sdktrace.IDGenerator.
func (ids) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if p, ok := ctx.Value(pinKey{}).(pinned); ok {
		return p.span
	}
	var sid trace.SpanID
	_, _ = rand.Read(sid[:])
	return sid
}
