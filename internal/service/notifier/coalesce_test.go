package notifier_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/service/notifier"
)

// published counts the publications of a Coalescer and signals each.
type published struct {
	n    atomic.Int64
	each chan struct{}
	fail atomic.Bool
}

func newPublished() *published { return &published{each: make(chan struct{}, 100)} }

func (p *published) publish(context.Context) error {
	p.n.Add(1)
	p.each <- struct{}{}
	if p.fail.Load() {
		return errors.New("the database said no")
	}
	return nil
}

// wait waits (bounded) for the next publication.
func (p *published) wait(t *testing.T, what string) {
	t.Helper()
	select {
	case <-p.each:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no publication within 10 s (%d so far)", what, p.n.Load())
	}
}

// TestCoalescer: the first change after a quiet spell is published at
// once; the changes noted while the interval runs — a burst of 1,000 — are
// published once, when it ends; an interval that passes with nothing noted
// ends the run, and the next change is published at once again; Close
// publishes what is pending and later Notes publish nothing. The fake
// clock moves only when the test moves it, so what is published between
// two moves is exact.
func TestCoalescer(t *testing.T) {
	ctx := context.Background()
	fake := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	p := newPublished()
	c := notifier.NewCoalescer(notifier.CoalescerConfig{Topic: "t", Interval: time.Second, Clock: fake, Publish: p.publish})
	armed := func(what string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := fake.WaitArmed(wctx, 1); err != nil {
			t.Fatalf("%s: the interval's timer is not armed: %v", what, err)
		}
	}

	c.Note()
	p.wait(t, "the leading edge")
	armed("after the leading edge")
	for range 1000 {
		c.Note()
	}
	if got := p.n.Load(); got != 1 {
		t.Fatalf("%d publications during the interval, want the leading one only", got)
	}
	fake.Advance(time.Second)
	p.wait(t, "the trailing edge")
	armed("after the trailing edge")
	if got := p.n.Load(); got != 2 {
		t.Fatalf("%d publications for a burst of 1,001 changes, want 2 (leading, trailing)", got)
	}
	fake.Advance(time.Second) // nothing noted: the run goes back to waiting

	c.Note() // after the quiet spell: at once, without moving the clock
	p.wait(t, "the next leading edge")
	armed("after the next leading edge")
	if got := p.n.Load(); got != 3 {
		t.Fatalf("%d publications, want 3: the quiet interval published nothing", got)
	}
	c.Note() // pending while the interval runs
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := p.n.Load(); got != 4 {
		t.Fatalf("%d publications after Close, want 4: Close publishes the pending change", got)
	}
	c.Note()
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := p.n.Load(); got != 4 {
		t.Fatalf("%d publications, want 4: nothing after Close", got)
	}
}

// TestCoalescerFailedPublish: a publication that fails is logged and not
// retried at once — the next change, or the end of the interval with
// changes noted, publishes again.
func TestCoalescerFailedPublish(t *testing.T) {
	ctx := context.Background()
	fake := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	p := newPublished()
	p.fail.Store(true)
	c := notifier.NewCoalescer(notifier.CoalescerConfig{Topic: "t", Interval: time.Second, Clock: fake, Publish: p.publish})
	defer c.Close(ctx) //nolint:errcheck // nothing pending
	c.Note()
	p.wait(t, "the failed publication")
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := fake.WaitArmed(wctx, 1); err != nil {
		t.Fatal(err)
	}
	p.fail.Store(false)
	c.Note()
	fake.Advance(time.Second)
	p.wait(t, "the next publication")
	if got := p.n.Load(); got != 2 {
		t.Fatalf("%d publications, want 2", got)
	}
}

// BenchmarkCoalescerNote: the cost Note adds to every committed move, with
// a publication pending (the common case under load: an atomic swap).
func BenchmarkCoalescerNote(b *testing.B) {
	c := notifier.NewCoalescer(notifier.CoalescerConfig{Topic: "t", Interval: time.Hour,
		Publish: func(context.Context) error { return nil }})
	defer c.Close(context.Background()) //nolint:errcheck // the publication is a no-op
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Note()
		}
	})
}
