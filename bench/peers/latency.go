package peers

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// sample is one job's enqueue→claim and enqueue→work-start.
type sample struct{ claim, start time.Duration }

// pacing is how latency samples are taken: one job at a time into an idle
// system, each after a random pause so that samples land at random points
// of the systems' poll and cool-down cycles.
type pacing struct {
	// samples are measured after warmup discarded ones (connections are
	// opened and statements prepared by the first jobs).
	samples, warmup int
	// gap: each job is enqueued a uniform random time in [minGap,
	// minGap+gap) after the previous one started.
	gap time.Duration
	// timeout bounds one sample.
	timeout time.Duration
}

// minGap keeps the previous job's completion out of the next sample.
const minGap = 10 * time.Millisecond

// run takes the samples: f enqueues job seq and waits until it has started.
func (p pacing) run(ctx context.Context, f func(ctx context.Context, seq int) (sample, error)) ([]sample, error) {
	timeout := p.timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	var out []sample
	for seq := range p.warmup + p.samples {
		pause := minGap
		if p.gap > 0 {
			pause += rand.N(p.gap)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
		sctx, cancel := context.WithTimeout(ctx, timeout)
		s, err := f(sctx, seq)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("latency sample %d: %w", seq, err)
		}
		if seq >= p.warmup {
			out = append(out, s)
		}
	}
	return out, nil
}

// summarize fills l's percentiles from samples.
func summarize(l Latency, samples []sample) Latency {
	claims := make([]time.Duration, len(samples))
	starts := make([]time.Duration, len(samples))
	for i, s := range samples {
		claims[i], starts[i] = s.claim, s.start
	}
	slices.Sort(claims)
	slices.Sort(starts)
	l.Samples = len(samples)
	l.ClaimP50, l.ClaimP99, l.ClaimMax = percentile(claims, 0.50), percentile(claims, 0.99), percentile(claims, 1)
	l.StartP50, l.StartP99, l.StartMax = percentile(starts, 0.50), percentile(starts, 0.99), percentile(starts, 1)
	return l
}
