// Package leader elects one hub among those on a database to hold a named
// leadership — today cks.MaintenanceLeadership: the hub whose sweepers run
// their passes, so that three hubs do not run every scan three times. It
// follows River's elector: a row per leadership (cks_leaders) taken by an
// upsert that succeeds only when nobody holds it or its lease ran out, renewed
// well inside its lease, given up on a clean stop with a notification that
// lets the others take over at once. A hub killed without resigning is
// replaced once its lease runs out: within TTL plus one Interval.
package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/lifecycle"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/driver"
)

// DefaultTTL is how long a leadership holds without renewal: a killed
// leader's maintenance resumes on another hub within DefaultTTL plus one
// renewal interval (DefaultTTL/3): CKS_LEADER_TTL's default.
const DefaultTTL = config.DefaultLeaderTTL

// Watcher delivers change notifications (notifier.Notifier).
type Watcher interface {
	WatchChanges(ctx context.Context, topics []string, f func(topic string)) error
}

// Config configures an Elector.
type Config struct {
	// Name is the leadership (default cks.MaintenanceLeadership).
	Name string
	// ID is this hub's id in the leadership row (default newID()).
	ID string
	// TTL is the lease of a held leadership (default DefaultTTL); Interval
	// how often a leader renews it and another hub tries to take it
	// (default TTL/3).
	TTL      time.Duration
	Interval time.Duration
	// Changes, when set, wakes the elector when another hub resigns.
	Changes Watcher
	Clock   clock.Clock
	Logger  *slog.Logger
	// OnChange is called, on the elector's goroutine, each time this hub
	// gains (true) or loses (false) the leadership.
	OnChange func(leader bool)
}

// Elector holds, or waits for, one leadership for this hub.
type Elector struct {
	db   driver.Driver
	cfg  Config
	base *lifecycle.Base

	mu sync.Mutex
	// held is whether this hub won its last election. A failed attempt (the
	// database unreachable) leaves it as it was: a hub that cannot reach
	// the database cannot sweep it either, and the others take over when
	// the lease runs out, as River's elector does.
	held bool
}

// newID returns a hub id for a leadership row: the host, the process and a
// random suffix, so a reused pid is a new id.
func newID() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), driver.NewLeaseToken()[:8])
}

// New returns a stopped Elector over db.
func New(db driver.Driver, cfg Config) *Elector {
	if cfg.Name == "" {
		cfg.Name = cks.MaintenanceLeadership
	}
	if cfg.ID == "" {
		cfg.ID = newID()
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Interval <= 0 {
		cfg.Interval = cfg.TTL / 3
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	e := &Elector{db: db, cfg: cfg}
	e.base = lifecycle.New(lifecycle.Config{Init: e.init, Run: e.run, OnPanic: func(v any, stack []byte) {
		cfg.Logger.Error("leader elector panicked; this hub stops taking part in the election", "panic", v, "stack", string(stack))
	}})
	return e
}

// ID returns this hub's id in the leadership row.
func (e *Elector) ID() string { return e.cfg.ID }

// IsLeader reports whether this hub holds the leadership: it won the last
// election it tried.
func (e *Elector) IsLeader() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.held
}

// Current returns the hub holding the leadership now, ok false when none
// does (a leader killed and its lease not yet run out still holds it).
func (e *Elector) Current(ctx context.Context) (cks.Leader, bool, error) {
	return Current(ctx, e.db, e.cfg.Name, e.cfg.Clock)
}

// Current returns who holds leadership name on db now.
func Current(ctx context.Context, db driver.Driver, name string, clk clock.Clock) (cks.Leader, bool, error) {
	r, err := db.Executor().LeaderGet(ctx, name, driver.Time(clk.Now()))
	if errors.Is(err, driver.ErrNoRows) {
		return cks.Leader{}, false, nil
	}
	if err != nil {
		return cks.Leader{}, false, fmt.Errorf("read leader of %s: %w", name, err)
	}
	return cks.Leader{Name: r.Name, ID: r.LeaderID, ElectedAt: r.ElectedAt, ExpiresAt: r.ExpiresAt}, true, nil
}

// Start tries one election before it returns (a lone hub is the leader
// from its first moment on), then keeps trying or renewing until Stop.
func (e *Elector) Start(ctx context.Context) error { return e.base.Start(ctx) }

// Stop ends the elector and, if this hub holds the leadership, resigns it
// and notifies the other hubs, so that one of them takes over at once.
func (e *Elector) Stop(ctx context.Context) error { return e.base.Stop(ctx) }

func (e *Elector) init(ctx context.Context) error {
	e.attempt(ctx)
	return nil
}

func (e *Elector) run(ctx context.Context) {
	wake := make(chan struct{}, 1)
	var wg sync.WaitGroup
	if e.cfg.Changes != nil {
		wg.Go(func() {
			err := e.cfg.Changes.WatchChanges(ctx, []string{cks.TopicLeader}, func(string) {
				select {
				case wake <- struct{}{}:
				default:
				}
			})
			if err != nil && ctx.Err() == nil {
				e.cfg.Logger.Warn("leader watch ended; elections go on at every interval", "err", err)
			}
		})
	}
	defer wg.Wait()
	for {
		clock.Sleep(ctx, e.cfg.Clock, e.cfg.Interval, wake) //nolint:errcheck // woken or timed out alike: try again
		if ctx.Err() != nil {
			e.resign()
			return
		}
		e.attempt(ctx)
	}
}

// attempt takes or renews the leadership once.
func (e *Elector) attempt(ctx context.Context) {
	_, err := e.db.Executor().LeaderElect(ctx, driver.LeaderElectParams{Name: e.cfg.Name, LeaderID: e.cfg.ID,
		TTL: e.cfg.TTL, Now: driver.Time(e.cfg.Clock.Now())})
	switch {
	case err == nil:
		e.set(true)
	case errors.Is(err, driver.ErrNoRows):
		if e.replaceDead(ctx) {
			e.attempt(ctx)
			return
		}
		e.set(false)
	case ctx.Err() == nil:
		e.cfg.Logger.Warn("leader election failed; trying again", "leadership", e.cfg.Name, "err", err)
	}
}

func (e *Elector) set(held bool) {
	e.mu.Lock()
	was := e.held
	e.held = held
	e.mu.Unlock()
	if was == held {
		return
	}
	if held {
		e.cfg.Logger.Info("this hub is the leader", "leadership", e.cfg.Name, "id", e.cfg.ID)
	} else {
		e.cfg.Logger.Info("this hub is no longer the leader", "leadership", e.cfg.Name, "id", e.cfg.ID)
	}
	if e.cfg.OnChange != nil {
		e.cfg.OnChange(held)
	}
}

// replaceDead gives up, for it, the leadership of a hub on this host whose
// process is gone (killed: it could not resign), so that a hub restarted
// in its place — the one hub of a SQLite file, `cks dev` after a crash —
// leads at once instead of when the dead one's lease runs out. It reports
// whether it removed the dead holder's row. A holder on another host, a
// pid that runs (or was reused), or an id of another shape waits for its
// lease, as before.
func (e *Elector) replaceDead(ctx context.Context) bool {
	cur, ok, err := e.Current(ctx)
	if err != nil || !ok || cur.ID == e.cfg.ID || !deadOnThisHost(cur.ID) {
		return false
	}
	gone, err := e.db.Executor().LeaderResign(ctx, e.cfg.Name, cur.ID)
	if err != nil || !gone {
		return false
	}
	e.cfg.Logger.Info("the leader's process on this host is gone; taking over at once",
		"leadership", e.cfg.Name, "dead", cur.ID)
	return true
}

// deadOnThisHost reports whether id (newID's host/pid/suffix) names a
// process of this host that no longer exists.
func deadOnThisHost(id string) bool {
	host, rest, ok := strings.Cut(id, "/")
	pidText, _, ok2 := strings.Cut(rest, "/")
	me, err := os.Hostname()
	if !ok || !ok2 || err != nil || host != me {
		return false
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return errors.Is(err, os.ErrProcessDone) || errors.Is(err, syscall.ESRCH)
}

// resign gives a held leadership up and notifies the other hubs in the same
// transaction. It runs as the elector stops, so on a context of its own.
func (e *Elector) resign() {
	e.mu.Lock()
	held := e.held
	e.mu.Unlock()
	if !held {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := e.db.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		if _, err := ex.LeaderResign(ctx, e.cfg.Name, e.cfg.ID); err != nil {
			return err
		}
		return ex.Notify(ctx, cks.TopicLeader)
	})
	if err != nil {
		e.cfg.Logger.Warn("resigning the leadership failed; another hub takes over when its lease runs out",
			"leadership", e.cfg.Name, "err", err)
	}
	e.set(false)
}
