package sweeper

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/cks-dev/cks"
)

// UnknownSweeperError is returned by Registry.Get for an id that is not
// registered. It matches ErrUnknownSweeper.
type UnknownSweeperError struct {
	// ID is the requested id.
	ID string
	// Known lists the registered ids in registration order.
	Known []string
}

// Error names the requested id and the known ones.
func (e *UnknownSweeperError) Error() string {
	known := "none"
	if len(e.Known) > 0 {
		known = strings.Join(e.Known, ", ")
	}
	return fmt.Sprintf("unknown sweeper %q; known sweepers: %s", e.ID, known)
}

// Unwrap makes errors.Is(err, ErrUnknownSweeper) hold.
func (e *UnknownSweeperError) Unwrap() error { return ErrUnknownSweeper }

// Registry is the ordered set of a process's sweeper runners, keyed by id.
// The zero value is ready to use.
type Registry struct {
	mu      sync.RWMutex
	runners []*Runner
	byID    map[string]*Runner
}

// newRegistry returns an empty Registry.
func newRegistry() *Registry { return &Registry{} }

// Register adds a runner for s: registering a sweeper is this one call. The
// runner is not started; see StartAll.
func (g *Registry) Register(s Sweeper, opts Options) (*Runner, error) {
	r, err := newRunner(s, opts)
	if err != nil {
		return nil, fmt.Errorf("register sweeper: %w", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.byID[r.id]; ok {
		return nil, fmt.Errorf("register sweeper %s: %w", r.id, ErrDuplicateSweeper)
	}
	if g.byID == nil {
		g.byID = map[string]*Runner{}
	}
	g.byID[r.id] = r
	g.runners = append(g.runners, r)
	return r, nil
}

// Get returns the runner of id, or an *UnknownSweeperError naming the known ids.
func (g *Registry) Get(id string) (*Runner, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if r, ok := g.byID[id]; ok {
		return r, nil
	}
	return nil, &UnknownSweeperError{ID: id, Known: g.idsLocked()}
}

// ids returns the registered ids in registration order.
func (g *Registry) ids() []string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.idsLocked()
}

func (g *Registry) idsLocked() []string {
	ids := make([]string, 0, len(g.runners))
	for _, r := range g.runners {
		ids = append(ids, r.id)
	}
	return ids
}

// Runners returns the runners in registration order.
func (g *Registry) Runners() []*Runner {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return append([]*Runner(nil), g.runners...)
}

// List returns every sweeper's status in registration order.
func (g *Registry) List() []cks.SweeperStatus {
	rs := g.Runners()
	out := make([]cks.SweeperStatus, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.Status())
	}
	return out
}

// StartAll applies the start-up rule (startIfAllowed) to every runner in
// registration order. A runner that fails does not keep the others from
// starting; the failures are returned joined.
func (g *Registry) StartAll(ctx context.Context, o Overrides) error {
	var errs []error
	for _, r := range g.Runners() {
		if _, err := startIfAllowed(ctx, r, o); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Follow applies the overrides another node may have changed (a process
// calls it on every cks.TopicSweeperControl notification): a running
// runner re-reads its override at once (wake: a stop stops it), and a
// stopped, config-enabled runner whose override is now explicitly true is
// started. So a start through any hub starts the sweeper on every hub, the
// maintenance leader among them — without it a start through a hub that
// stands by would leave the sweeper's passes running nowhere (issue 26).
// A stopped runner with no override row is left as it is (a start always
// writes one). Failed reads and starts are returned joined; the other
// runners are followed all the same.
func (g *Registry) Follow(ctx context.Context, o Overrides) error {
	var errs []error
	for _, r := range g.Runners() {
		if r.Status().Running {
			r.wake()
			continue
		}
		if !r.enabled || o == nil {
			continue
		}
		want, err := o.GetSweeperDesiredRunning(ctx, r.id)
		if err != nil {
			errs = append(errs, fmt.Errorf("follow sweeper %s: read override: %w", r.id, err))
			continue
		}
		r.update(func(s *cks.SweeperStatus) { s.DesiredRunning = want })
		if want == nil || !*want {
			continue
		}
		if err := r.Start(ctx); err != nil {
			errs = append(errs, fmt.Errorf("follow sweeper %s: %w", r.id, err))
			continue
		}
		r.log.Info("sweeper started by its override (desired_running=true, set on another node)")
	}
	return errors.Join(errs...)
}

// StopAll stops every runner, in reverse registration order, and returns the
// failures joined.
func (g *Registry) StopAll(ctx context.Context) error {
	rs := g.Runners()
	var errs []error
	for i := len(rs) - 1; i >= 0; i-- {
		if err := rs[i].Stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// startIfAllowed is the start-up rule of ADR-015 §2. A config-disabled runner
// is never started, whatever the override says; otherwise the override is read
// once (o may be nil: no override store) and the runner is started unless it
// is explicitly false. It reports whether the runner is running afterwards. A
// failed override read is returned as an error and the runner is left stopped.
func startIfAllowed(ctx context.Context, r *Runner, o Overrides) (started bool, err error) {
	if !r.enabled {
		r.log.Info("sweeper disabled by configuration; not started")
		return false, nil
	}
	if o != nil {
		want, err := o.GetSweeperDesiredRunning(ctx, r.id)
		if err != nil {
			return false, fmt.Errorf("start sweeper %s: read override: %w", r.id, err)
		}
		r.update(func(s *cks.SweeperStatus) { s.DesiredRunning = want })
		if want != nil && !*want {
			r.log.Info("sweeper stopped by its override (desired_running=false); not started")
			return false, nil
		}
	}
	if err := r.Start(ctx); err != nil {
		return false, err
	}
	return true, nil
}
