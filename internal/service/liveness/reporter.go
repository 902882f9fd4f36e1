package liveness

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/lifecycle"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/driver"
)

// DefaultInterval is the liveness interval of a process that names none
// (ADR-014 §2: 30 s, independent of the lease heartbeat): the agents'
// default (config.DefaultLivenessInterval).
const DefaultInterval = config.DefaultLivenessInterval

// Exited is row r as an exited process leaves it: exited at at (ADR-016 §3:
// it reads stopped at once, `exited` in a listing), its last heartbeat kept,
// no task in hand, and started at at if it never was. A process's own
// graceful exit writes it (Reporter.Stop), and so does the one that reaped
// a process that could not (Service.RecordExited).
func Exited(r cks.AgentLiveness, at time.Time) cks.AgentLiveness {
	if r.StartedAt.IsZero() { // never started: the exit is its one write
		r.StartedAt = at
	}
	r.ExitedAt = at
	r.CurrentTaskID, r.CurrentTaskType = nil, ""
	return r
}

// ReporterStore is what a Reporter needs of the store.
type ReporterStore interface {
	UpsertAgentLiveness(ctx context.Context, r cks.AgentLiveness) error
	GetAgentLiveness(ctx context.Context, instanceID string) (cks.AgentLiveness, error)
}

// Watcher is what a Reporter needs of the change notifications: to learn
// of a stop request (cks.TopicAgentStop) at once (notifier.Notifier).
type Watcher interface {
	WatchChanges(ctx context.Context, topics []string, f func(topic string)) error
}

// ReporterConfig configures a Reporter.
type ReporterConfig struct {
	// Kind is the process kind (one of KnownKinds).
	Kind string
	// TaskTypes are the task types the process claims, written on its row
	// so the Agent Panel can say what it works on; none for a process that
	// claims no tasks.
	TaskTypes []string
	// Interval is the liveness interval; DefaultInterval when 0.
	Interval time.Duration
	// OnStopRequested is called once when the process's row asks it to stop
	// (desired_state stop_requested). Agents pass the cancel function of the
	// same context SIGTERM cancels, so both end the process the same way.
	OnStopRequested func()
	// NoFastPath turns off the change watch on cks.TopicAgentStop, leaving
	// the tick's read-back as the only way a stop request arrives (the
	// ADR-016 baseline; for measurements).
	NoFastPath bool
	// Changes carries the fast path's notifications; nil, like NoFastPath,
	// leaves the tick's read-back the only way.
	Changes Watcher
	// Clock tells the heartbeat times and times the interval; the system
	// clock when nil. An agent passes its backend's (backend.Backend.Clock,
	// the database's on Postgres), since hubs on other hosts judge the
	// heartbeats.
	Clock clock.Clock
	// Logger receives failed ticks (the process keeps running); nil is
	// slog.Default().
	Logger *slog.Logger
}

// Reporter is the heartbeat of one agent process instance (ADR-014, with
// the stop request of ADR-016): it writes its row at Start and every
// interval, reads the row back on each tick and, beyond the seed, whenever
// cks.TopicAgentStop is published, and calls OnStopRequested when asked
// to stop. Stop writes a final heartbeat with the exit time (exited_at), so
// the row reads stopped at once (ADR-016 §3) and keeps a real last
// heartbeat. Its loop
// runs on a lifecycle.Base.
type Reporter struct {
	st  ReporterStore
	cfg ReporterConfig
	log *slog.Logger

	mu   sync.Mutex
	row  cks.AgentLiveness
	held []heldTask // the tasks in hand, oldest first (HoldTask)
	once sync.Once  // OnStopRequested

	poke chan struct{} // the current task changed: write soon
	base *lifecycle.Base
}

// NewReporter returns a Reporter for a new process instance of cfg.Kind with
// a fresh random instance id. Nothing is written before Start.
func NewReporter(st ReporterStore, cfg ReporterConfig) *Reporter {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	r := &Reporter{st: st, cfg: cfg, log: log, poke: make(chan struct{}, 1),
		row: cks.AgentLiveness{InstanceID: NewInstanceID(), ProcessKind: cfg.Kind, Hostname: host,
			PID: os.Getpid(), LivenessIntervalS: cfg.Interval.Seconds(), TaskTypes: slices.Clone(cfg.TaskTypes)}}
	r.base = lifecycle.New(lifecycle.Config{Init: r.first, Run: r.run, OnPanic: func(v any, stack []byte) {
		log.Error("liveness reporter panicked; no more heartbeats", "instance_id", r.row.InstanceID,
			"panic", v, "stack", string(stack))
	}})
	return r
}

// NewInstanceID returns a random UUID (version 4), the id of one process
// instance.
func NewInstanceID() string {
	var b [16]byte
	rand.Read(b[:]) //nolint:errcheck // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// InstanceID returns this process instance's id.
func (r *Reporter) InstanceID() string { return r.row.InstanceID }

// Row returns the row as last written (or about to be).
func (r *Reporter) Row() cks.AgentLiveness {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.row
}

// Start writes the first heartbeat (started_at = last_heartbeat_at = now)
// and starts the tick and, unless NoFastPath, the watch for stop requests.
// A failure of the first write is returned and nothing is started: a
// process that cannot reach its store at start should say so and exit. A
// Start of a running reporter does nothing.
func (r *Reporter) Start(ctx context.Context) error { return r.base.Start(ctx) }

// first writes the first heartbeat (the Base's Init).
func (r *Reporter) first(ctx context.Context) error {
	now := driver.Time(r.cfg.Clock.Now())
	r.mu.Lock()
	r.row.StartedAt, r.row.LastHeartbeatAt = now, now
	row := r.row
	r.mu.Unlock()
	if err := r.st.UpsertAgentLiveness(ctx, row); err != nil {
		return fmt.Errorf("liveness: first heartbeat of %s %s: %w", r.cfg.Kind, row.InstanceID, err)
	}
	return nil
}

// run is the loop: the watch for stop requests on a goroutine of its own
// (unless NoFastPath), which it waits for before returning, and the tick.
func (r *Reporter) run(ctx context.Context) {
	if !r.cfg.NoFastPath && r.cfg.Changes != nil {
		var watch sync.WaitGroup
		defer watch.Wait()
		watch.Go(func() {
			err := r.cfg.Changes.WatchChanges(ctx, []string{cks.TopicAgentStop}, func(string) { r.checkStop(ctx) })
			if err != nil && ctx.Err() == nil {
				r.log.Warn("stop-request watch ended", "instance_id", r.row.InstanceID, "err", err)
			}
		})
	}
	r.tickLoop(ctx)
}

// tickLoop writes the heartbeat every interval of the clock (and at once
// when the current task changed, which does not move the next tick) and
// reads the row back on each tick for a stop request. The timer is re-armed
// only after a tick's write and read are done, so a test that moved a fake
// clock knows the tick is done once the reporter waits on the clock again.
func (r *Reporter) tickLoop(ctx context.Context) {
	t := r.cfg.Clock.NewTimer(r.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			r.tick(ctx)
			r.checkStop(ctx)
			t.Reset(r.cfg.Interval)
		case <-r.poke:
			r.tick(ctx)
		}
	}
}

// tick writes one heartbeat. Stop does not cancel it (Stop waits for it
// instead): a cancelled write can still commit on Postgres, after Stop's
// final heartbeat, and make an exited process read alive. Its time
// is bounded by the interval.
func (r *Reporter) tick(ctx context.Context) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(r.cfg.Interval, time.Second))
	defer cancel()
	r.write(wctx, false) //nolint:errcheck // logged; the next tick retries
}

// write upserts the row with a fresh heartbeat, and when final the exit
// at that time with no current task. A failure is logged and left to the
// next tick.
func (r *Reporter) write(ctx context.Context, final bool) error {
	r.mu.Lock()
	r.row.LastHeartbeatAt = driver.Time(r.cfg.Clock.Now())
	if final {
		r.row = Exited(r.row, r.row.LastHeartbeatAt)
	}
	row := r.row
	r.mu.Unlock()
	err := r.st.UpsertAgentLiveness(ctx, row)
	if err != nil && ctx.Err() == nil {
		r.log.Warn("liveness heartbeat failed; retrying at the next tick", "instance_id", row.InstanceID, "err", err)
	}
	return err
}

// checkStop reads the row back and calls OnStopRequested once if it asks
// the process to stop.
func (r *Reporter) checkStop(ctx context.Context) {
	got, err := r.st.GetAgentLiveness(ctx, r.row.InstanceID)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, cks.ErrNotFound) {
			r.log.Warn("reading own liveness row failed", "instance_id", r.row.InstanceID, "err", err)
		}
		return
	}
	if got.DesiredState == cks.DesiredStopRequested {
		r.once.Do(func() {
			r.log.Info("stop requested", "instance_id", r.row.InstanceID, "process_kind", r.cfg.Kind)
			if r.cfg.OnStopRequested != nil {
				r.cfg.OnStopRequested()
			}
		})
	}
}

// HoldTask records a task the process now holds; it is written with the
// next heartbeat, which comes at once (best effort: the ledger, not this
// row, is the truth about tasks). A process working several tasks at once
// (an agent's --concurrency) shows the oldest it holds as its current
// task; the ledger's claimed_by names them all.
func (r *Reporter) HoldTask(id int64, taskType string) {
	r.mu.Lock()
	r.held = append(r.held, heldTask{id: id, typ: taskType})
	r.showHeldLocked()
	r.mu.Unlock()
	r.nudge()
}

// ReleaseTask records that the process no longer holds task id.
func (r *Reporter) ReleaseTask(id int64) {
	r.mu.Lock()
	r.held = slices.DeleteFunc(r.held, func(h heldTask) bool { return h.id == id })
	r.showHeldLocked()
	r.mu.Unlock()
	r.nudge()
}

// heldTask is a task the process holds, in the order it took them.
type heldTask struct {
	id  int64
	typ string
}

// showHeldLocked puts the oldest held task on the row (none when idle).
func (r *Reporter) showHeldLocked() {
	if len(r.held) == 0 {
		r.row.CurrentTaskID, r.row.CurrentTaskType = nil, ""
		return
	}
	id := r.held[0].id
	r.row.CurrentTaskID, r.row.CurrentTaskType = &id, r.held[0].typ
}

func (r *Reporter) nudge() {
	select {
	case r.poke <- struct{}{}:
	default:
	}
}

// Stop ends the tick and the watch, waits for them, and writes the final
// heartbeat with the exit time and no current task, so the process reads
// stopped (exited) at once. ctx bounds the wait and that write; a Stop of a
// reporter never started writes only the final heartbeat.
func (r *Reporter) Stop(ctx context.Context) error {
	if err := r.base.Stop(ctx); err != nil {
		// A tick may still be writing: a final heartbeat now could be
		// overtaken by it.
		return fmt.Errorf("liveness: stop the reporter of %s: %w", r.row.InstanceID, err)
	}
	return r.write(ctx, true)
}
