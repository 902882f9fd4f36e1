package peers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivermigrate"
)

// noopArgs are the arguments of River's benchmark jobs. Seq numbers the
// latency samples.
type noopArgs struct {
	Seq int `json:"seq"`
}

// Kind is River's job kind.
func (noopArgs) Kind() string { return "peers_noop" }

// riverSettings are the River client settings of a run.
type riverSettings struct {
	workers int
	// cooldown and poll are Config.FetchCooldown and FetchPollInterval;
	// zero is River's default (100 ms and 1 s).
	cooldown, poll time.Duration
	// work runs each job; nil is a no-op.
	work func(context.Context, *river.Job[noopArgs]) error
}

// migrateRiver creates River's tables in schema ("" for the driver's
// default).
func migrateRiver[TTx any](ctx context.Context, drv riverdriver.Driver[TTx], schema string) error {
	m, err := rivermigrate.New(drv, &rivermigrate.Config{Schema: schema, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fmt.Errorf("peers: river migrator: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("peers: river migrate: %w", err)
	}
	return nil
}

func newRiverClient[TTx any](drv riverdriver.Driver[TTx], schema string, s riverSettings) (*river.Client[TTx], error) {
	work := s.work
	if work == nil {
		work = func(context.Context, *river.Job[noopArgs]) error { return nil }
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(work))
	c, err := river.NewClient(drv, &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: s.workers}},
		Workers:           workers,
		Schema:            schema,
		FetchCooldown:     s.cooldown,
		FetchPollInterval: s.poll,
		Logger:            slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return nil, fmt.Errorf("peers: river client: %w", err)
	}
	return c, nil
}

// riverThroughput inserts jobs in batches of insertBatch (InsertManyFast,
// River's bulk insert), then starts the client and waits until every job
// has completed exactly once, as River's completion events tell (they are
// sent after the completer's commit). The client is stopped on return.
//
// With priorities > 1 job i gets River priority priorities - i%priorities
// (River works priority 1 first), so that River takes the jobs in the order
// cks takes its tasks at priority i % priorities.
func riverThroughput[TTx any](ctx context.Context, c *river.Client[TTx], jobs, priorities, insertBatch int, progress func(phase string, done, total int)) (enqueue, work time.Duration, err error) {
	start := time.Now()
	params := make([]river.InsertManyParams, 0, insertBatch)
	for i := 0; i < jobs; {
		params = params[:0]
		for ; i < jobs && len(params) < insertBatch; i++ {
			p := river.InsertManyParams{Args: noopArgs{Seq: i}}
			if priorities > 1 {
				p.InsertOpts = &river.InsertOpts{Priority: priorities - i%priorities}
			}
			params = append(params, p)
		}
		if _, err := c.InsertManyFast(ctx, params); err != nil {
			return 0, 0, fmt.Errorf("peers: river insert: %w", err)
		}
		progress("enqueue", i, jobs)
	}
	enqueue = time.Since(start)

	events, cancel := c.SubscribeConfig(&river.SubscribeConfig{ChanSize: jobs + 1024,
		Kinds: []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed}})
	defer cancel()
	seen := make(map[int64]struct{}, jobs)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	start = time.Now()
	if err := c.Start(ctx); err != nil {
		return enqueue, 0, fmt.Errorf("peers: river start: %w", err)
	}
	defer func() {
		sctx, stop := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer stop()
		err = errors.Join(err, c.Stop(sctx))
	}()
	for len(seen) < jobs {
		select {
		case <-ctx.Done():
			return enqueue, 0, fmt.Errorf("peers: river: %d of %d jobs completed: %w", len(seen), jobs, ctx.Err())
		case <-tick.C:
			progress("work", len(seen), jobs)
		case ev, ok := <-events:
			if !ok {
				return enqueue, 0, fmt.Errorf("peers: river: subscription closed after %d of %d jobs", len(seen), jobs)
			}
			if ev.Kind != river.EventKindJobCompleted {
				return enqueue, 0, fmt.Errorf("peers: river: job %d: %s", ev.Job.ID, ev.Kind)
			}
			if _, dup := seen[ev.Job.ID]; dup {
				return enqueue, 0, fmt.Errorf("peers: river: job %d completed twice", ev.Job.ID)
			}
			seen[ev.Job.ID] = struct{}{}
		}
	}
	work = time.Since(start)
	progress("work", len(seen), jobs)
	return enqueue, work, nil
}

// riverLatency starts a client of s.workers idle workers and then inserts
// one job at a time (Insert), pacing them by pace, and measures each job's
// enqueue→claim (its attempted_at) and enqueue→work-start.
func riverLatency[TTx any](ctx context.Context, drv riverdriver.Driver[TTx], schema string, s riverSettings, p pacing) ([]sample, error) {
	type started struct {
		seq       int
		attempted time.Time
		at        time.Time
	}
	ch := make(chan started, 16)
	s.work = func(ctx context.Context, j *river.Job[noopArgs]) error {
		st := started{seq: j.Args.Seq, at: time.Now()}
		if j.AttemptedAt != nil {
			st.attempted = *j.AttemptedAt
		}
		select {
		case ch <- st:
		default: // nobody waits for it (its sample timed out)
		}
		return nil
	}
	c, err := newRiverClient(drv, schema, s)
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("peers: river start: %w", err)
	}
	defer func() {
		sctx, stop := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer stop()
		c.Stop(sctx) //nolint:errcheck // the samples are taken
	}()
	return p.run(ctx, func(ctx context.Context, seq int) (sample, error) {
		t0 := time.Now()
		if _, err := c.Insert(ctx, noopArgs{Seq: seq}, nil); err != nil {
			return sample{}, fmt.Errorf("peers: river insert: %w", err)
		}
		for {
			select {
			case <-ctx.Done():
				return sample{}, ctx.Err()
			case st := <-ch:
				if st.seq != seq {
					continue // a warm-up job worked late
				}
				return sample{claim: st.attempted.Sub(t0), start: st.at.Sub(t0)}, nil
			}
		}
	})
}
