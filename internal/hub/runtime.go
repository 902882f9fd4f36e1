package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/events"
	"github.com/cks-dev/cks/internal/base/lifecycle"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/knowledge"
	"github.com/cks-dev/cks/internal/service/leader"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/service/schedule"
)

// RuntimeConfig configures the in-process machinery of a hub.
type RuntimeConfig struct {
	// Clock is the hub's clock; nil: the store's (backend.Backend.Clock).
	Clock  clock.Clock
	Logger *slog.Logger
	// Settings are the hub's (config.ParseHub); without Sweepers (the
	// zero value), every default.
	Settings config.Hub
	// WatchInterval is how often process liveness is re-read to publish
	// change events (default 1 s).
	WatchInterval time.Duration
	// NoChangeWatch turns off the change-notification fast path, leaving only
	// the per-tick override check (for tests and measurements of that path).
	NoChangeWatch bool
	// Changes carries the fast path's notifications; the backend's own
	// (notifier.Notifier) when nil.
	Changes interface {
		WatchChanges(ctx context.Context, topics []string, f func(topic string)) error
	}
	// OnSweep, if set, is called after every sweeper pass (for metrics).
	OnSweep func(id string, d time.Duration, count int, err error)
}

// Runtime is one process's event bus, sweepers and the watchers that feed
// them, over one store; the watchers run on a lifecycle.Base, as each
// sweeper runner does. Several Runtimes (hubs) may share a store: sweeper
// overrides are read from it at start, at every tick, and at once when a
// change notification arrives.
type Runtime struct {
	Store    *backend.Backend
	Bus      *events.Bus
	Liveness *liveness.Service
	Sweepers *sweeper.Controller
	// Leader elects the hub whose sweepers run their passes among the hubs
	// on the database; the others' runners stand by.
	Leader *leader.Elector
	// Schedules fires the schedules' due slots while this hub leads
	// (issue 42), on a timer to the next slot.
	Schedules *schedule.Runner

	cfg RuntimeConfig
	// watchers runs watch from Start until Stop.
	watchers *lifecycle.Base
}

// NewRuntime registers the sweepers with cfg.Settings (zero Settings: every
// default, config.DefaultHub). Nothing runs until Start.
func NewRuntime(st *backend.Backend, cfg RuntimeConfig) (*Runtime, error) {
	if cfg.Clock == nil {
		cfg.Clock = st.Clock() // the database's on Postgres
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.WatchInterval <= 0 {
		cfg.WatchInterval = time.Second
	}
	if cfg.Changes == nil {
		cfg.Changes = st.Changes
	}
	set := cfg.Settings
	if set.Sweepers == nil {
		set = config.DefaultHub()
	}
	bus := &events.Bus{}
	onRun := func(id string, d time.Duration, count int, err error) {
		if cfg.OnSweep != nil {
			cfg.OnSweep(id, d, count, err)
		}
		bus.Publish(events.Event{Type: events.SweepersChanged, At: cfg.Clock.Now()})
		if count > 0 { // a pass that handled tasks (reaped a lease, resolved an abort) moved them
			bus.Publish(events.Event{Type: events.TasksChanged, At: cfg.Clock.Now()})
		}
	}
	reg := st.Sweepers.Registry()
	var schedules *schedule.Runner // woken when this hub becomes the leader
	elector := leader.New(st.Driver(), leader.Config{TTL: set.LeaderTTL, Changes: cfg.Changes, Clock: cfg.Clock,
		Logger: cfg.Logger, OnChange: func(held bool) {
			if held { // run at once what the previous leader no longer runs
				for _, r := range reg.Runners() {
					r.RunNow()
				}
				schedules.Wake()
			}
			bus.Publish(events.Event{Type: events.SweepersChanged, At: cfg.Clock.Now()})
		}})
	for _, sw := range []sweeper.Sweeper{
		sweeper.LeaseReaper{Tasks: st.Tasks, Claims: st.Objects, Clock: cfg.Clock, StaleWindow: set.Ledger.DefaultLease,
			ClaimTokens: func(ctx context.Context) (int, error) {
				return st.Principals.DeleteEndedCredentials(ctx, cfg.Clock.Now())
			}},
		sweeper.DependencyRelease{Tasks: st.Tasks},
		sweeper.StaleStopReport{Tasks: st.Tasks, Clock: cfg.Clock, Threshold: set.StaleStopThreshold, Logger: cfg.Logger},
		sweeper.ForkDetection{Tasks: st.Tasks, Forks: st.Objects},
		sweeper.Contradiction{Tasks: st.Tasks, Objects: st.Objects},
		sweeper.InferenceStaleness{Tasks: st.Tasks, Objects: st.Objects},
		&sweeper.GraphHealth{Tasks: st.Tasks, Objects: st.Objects, Edges: st.Objects},
		&sweeper.Retention{Liveness: liveness.NewService(st.Driver(), cfg.Clock), Passes: st.Sweepers, Clock: cfg.Clock,
			Age: set.Retention, TasksAge: set.RetentionTasks, Tasks: taskArchive(st.Tasks, set.RetentionArchive, cfg.Clock),
			KnowledgeAge: set.RetentionKnowledge, Knowledge: knowledgeArchive(st.Objects, set.RetentionArchive, cfg.Clock)},
	} {
		conf, ok := set.Sweepers[sw.ID()]
		if !ok { // Settings built by hand without this sweeper: its defaults
			if conf, ok = config.DefaultSweepers()[sw.ID()]; !ok {
				return nil, fmt.Errorf("sweeper %s has no settings in config.DefaultSweepers", sw.ID())
			}
		}
		if _, err := reg.Register(sw, sweeper.Options{Interval: conf.Interval, ConfigEnabled: conf.Enabled, Overrides: st.Sweepers,
			Clock: cfg.Clock, Logger: cfg.Logger, OnRun: onRun, Leader: elector, Passes: st.Sweepers, Hub: elector.ID()}); err != nil {
			return nil, err
		}
	}
	schedules = schedule.NewRunner(st.Schedules, schedule.RunnerConfig{Leader: elector, Changes: cfg.Changes,
		Clock: cfg.Clock, Logger: cfg.Logger})
	rt := &Runtime{
		Store:     st,
		Bus:       bus,
		Liveness:  liveness.NewService(st.Driver(), cfg.Clock),
		Sweepers:  st.Sweepers,
		Leader:    elector,
		Schedules: schedules,
		cfg:       cfg,
	}
	rt.watchers = lifecycle.New(lifecycle.Config{Run: rt.watch, OnPanic: func(v any, stack []byte) {
		cfg.Logger.Error("hub watchers panicked; no more process or sweeper control events", "panic", v, "stack", string(stack))
	}})
	return rt, nil
}

// taskArchive is the retention sweeper's archive-then-delete of tasks into
// the file at path; nil (tasks kept) without a path.
func taskArchive(tasks *ledger.Service, path string, c clock.Clock) sweeper.TaskArchiver {
	if path == "" {
		return nil
	}
	archive := ledger.FileArchive(path, c.Now)
	return sweeper.TaskArchiverFunc(func(ctx context.Context, before time.Time, maxTasks int) (int, error) {
		return tasks.ArchiveTerminal(ctx, before, maxTasks, archive)
	})
}

// KnowledgeArchive is the knowledge archive's file name, in the directory
// of the task archive.
const KnowledgeArchive = "knowledge.jsonl"

// knowledgeArchive is the retention sweeper's archive-then-delete of old
// transition-log rows into KnowledgeArchive beside the task archive at
// taskPath; nil (the log kept) without a path.
func knowledgeArchive(objects *knowledge.Service, taskPath string, c clock.Clock) sweeper.KnowledgeArchiver {
	if taskPath == "" {
		return nil
	}
	archive := knowledge.FileArchive(filepath.Join(filepath.Dir(taskPath), KnowledgeArchive), c.Now)
	return sweeper.KnowledgeArchiverFunc(func(ctx context.Context, before time.Time, maxRows int) (int, error) {
		return objects.ArchiveFinalLogs(ctx, before, maxRows, archive)
	})
}

// Start starts every config-enabled sweeper whose stored override is not
// false, and the background watchers. It returns once they are running; a
// Start of a running Runtime starts nothing more.
func (rt *Runtime) Start(ctx context.Context) error {
	// The first election runs before the sweepers start, so a lone hub's
	// first passes run at once.
	if err := rt.Leader.Start(ctx); err != nil {
		return err
	}
	if err := rt.Sweepers.Registry().StartAll(ctx, rt.Store.Sweepers); err != nil {
		// A failed override read leaves that sweeper stopped; say so, go on.
		rt.cfg.Logger.Error("starting sweepers", "err", err)
	}
	if err := rt.Schedules.Start(ctx); err != nil {
		return err
	}
	return rt.watchers.Start(ctx)
}

// Stop stops the sweepers and the watchers and waits for them, unless ctx
// ends first. Stopping twice is stopping once; Start starts them again.
func (rt *Runtime) Stop(ctx context.Context) error {
	// The watchers first: the sweeper control watch starts runners
	// (Follow), so it must not start one StopAll has stopped. The
	// leadership is resigned after the sweepers and the schedule runner
	// stopped: no pass or fire of this hub overlaps one of the hub that
	// takes over (a fire is one transaction anyway: it fires a slot once
	// whoever else fires).
	watched := rt.watchers.Stop(ctx)
	swept := rt.Sweepers.Registry().StopAll(ctx)
	scheduled := rt.Schedules.Stop(ctx)
	return errors.Join(watched, swept, scheduled, rt.Leader.Stop(ctx))
}

// watch is the watchers' loop: the liveness watch and the sweeper control
// watch, until ctx ends (Stop).
func (rt *Runtime) watch(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() {
		rt.Liveness.Watch(ctx, rt.cfg.WatchInterval,
			func() { rt.Bus.Publish(events.Event{Type: events.ProcessesChanged, At: rt.cfg.Clock.Now()}) },
			func(err error) { rt.cfg.Logger.Warn("liveness watch", "err", err) })
	})
	if !rt.cfg.NoChangeWatch {
		wg.Go(func() {
			// The fast path of ADR-015's cross-node stop, and the path of a
			// cross-node start: a change to the override table, made by any
			// node, wakes every local runner to re-read its override now
			// instead of at its next tick, and starts a stopped one whose
			// override now says start (sweeper.Registry.Follow). A change
			// of the knowledge store, made by any process (a pipeline agent),
			// tells the hub's viewers (the studio's object and research
			// pages follow their question through its steps).
			// A task made ready, moved (claimed, started, completed, failed
			// … by a standalone agent: TopicTasksMoved, coalesced by the
			// process that moved it), or an abort requested or confirmed,
			// by any process, tells them too (the board, task and charts
			// pages follow it), as does a task type paused or resumed on
			// any hub (the board shows the paused types). A schedule
			// changed on any hub tells them too (the Flow control page).
			topics := []string{cks.TopicSweeperControl, cks.TopicObjects, cks.TopicTasksReady, cks.TopicTaskAborts,
				cks.TopicTasksMoved, cks.TopicFlowControl, cks.TopicSchedules}
			err := rt.cfg.Changes.WatchChanges(ctx, topics, func(topic string) {
				switch topic {
				case cks.TopicObjects:
					rt.Bus.Publish(events.Event{Type: events.ObjectsChanged, At: rt.cfg.Clock.Now()})
					return
				case cks.TopicSchedules:
					rt.Bus.Publish(events.Event{Type: events.SchedulesChanged, At: rt.cfg.Clock.Now()})
					return
				case cks.TopicTasksReady, cks.TopicTaskAborts, cks.TopicTasksMoved, cks.TopicFlowControl:
					rt.Bus.Publish(events.Event{Type: events.TasksChanged, At: rt.cfg.Clock.Now()})
					return
				}
				if err := rt.Sweepers.Registry().Follow(ctx, rt.Store.Sweepers); err != nil && ctx.Err() == nil {
					rt.cfg.Logger.Warn("following the sweepers' overrides", "err", err)
				}
				rt.Bus.Publish(events.Event{Type: events.SweepersChanged, At: rt.cfg.Clock.Now()})
			})
			if err != nil && !errors.Is(err, context.Canceled) {
				rt.cfg.Logger.Error("change watch ended", "err", err)
			}
		})
	}
	wg.Wait()
}
