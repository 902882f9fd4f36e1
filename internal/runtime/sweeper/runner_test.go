package sweeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
)

func TestNewRunnerRejectsBadInput(t *testing.T) {
	cases := []struct {
		name string
		s    Sweeper
		opts Options
		want error
	}{
		{"nil sweeper", nil, Options{Interval: time.Second}, nil},
		{"empty id", noop(""), Options{Interval: time.Second}, ErrInvalidID},
		{"upper-case id", noop("Lease_Reaper"), Options{Interval: time.Second}, ErrInvalidID},
		{"dash in id", noop("lease-reaper"), Options{Interval: time.Second}, ErrInvalidID},
		{"zero interval", noop("x"), Options{}, nil},
		{"negative interval", noop("x"), Options{Interval: -time.Second}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := newRunner(c.s, c.opts)
			if err == nil {
				t.Fatalf("NewRunner = %v, nil; want an error", r)
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
}

func TestStatusRecordsEachPass(t *testing.T) {
	c := clock.NewFake(t0())
	sw := sweeperFunc("lease_reaper", func(_ context.Context, call int) (int, error) {
		c.Advance(250 * time.Millisecond)
		if call == 2 {
			return 1, errors.New("store down")
		}
		return 7, nil
	})
	var mu sync.Mutex
	var runs []string
	rec := &memRecorder{}
	r, p := newTestRunner(t, sw, Options{Passes: rec, Hub: "hub-a",
		Interval: time.Millisecond, ConfigEnabled: true, Clock: c,
		OnRun: func(id string, d time.Duration, count int, err error) {
			mu.Lock()
			defer mu.Unlock()
			if len(runs) < 3 {
				runs = append(runs, strings.Join([]string{id, d.String(), strings.Repeat("x", count), errString(err)}, "|"))
			}
		},
	})

	st := r.Status()
	want := cks.SweeperStatus{AgentID: "lease_reaper", Kind: "sweeper", ConfigEnabled: true, IntervalS: 0.001}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("before start: %+v, want %+v", st, want)
	}
	mustStart(t, r)
	// The interval is on the fake clock: each wait ends when the test moves
	// it (by a pass's 250ms, so passes start at multiples of 250ms).
	for range 2 {
		tick(t, c, 250*time.Millisecond)
	}
	st = p.waitFor(t, r, "three passes", func(s cks.SweeperStatus) bool { return s.RunCount >= 3 })
	if !st.Running || st.LastRunAt == nil || st.LastResultCount == nil || st.LastRunDurationMS == nil {
		t.Fatalf("after passes: %+v", st)
	}
	if *st.LastRunDurationMS != 250 {
		t.Errorf("last_run_duration_ms = %v, want 250 (from the injected clock)", *st.LastRunDurationMS)
	}
	if !st.LastRunAt.After(t0()) || st.LastRunAt.Sub(t0())%(250*time.Millisecond) != 0 {
		t.Errorf("last_run_at = %v, want t0 + a multiple of 250ms", st.LastRunAt)
	}
	mustStop(t, r)
	mu.Lock()
	got := slices.Clone(runs)
	mu.Unlock()
	wantRuns := []string{"lease_reaper|250ms|xxxxxxx|", "lease_reaper|250ms|x|store down", "lease_reaper|250ms|xxxxxxx|"}
	if !slices.Equal(got, wantRuns) {
		t.Errorf("OnRun calls = %q, want %q", got, wantRuns)
	}
	if st := r.Status(); st.Running || p.live.Load() != 0 {
		t.Errorf("after stop: running %v, live loops %d", st.Running, p.live.Load())
	}
	// The recorded passes, in order: what OnRun heard, with the hub.
	var passes []string
	for _, p := range rec.all() {
		passes = append(passes, fmt.Sprintf("%s|%s|%v|%d|%s", p.id, p.Hub, p.DurationMS, p.Count, p.Error))
	}
	if n := len(passes); n < 3 || !slices.Equal(passes[:3], []string{"lease_reaper|hub-a|250|7|", "lease_reaper|hub-a|250|1|store down", "lease_reaper|hub-a|250|7|"}) {
		t.Errorf("recorded passes = %q, want the first three", passes)
	}
	if all := rec.all(); !all[len(all)-1].At.Equal(*st.LastRunAt) {
		t.Errorf("last recorded pass at %v, last_run_at %v", all[len(all)-1].At, st.LastRunAt)
	}
}

// memRecorder is a PassRecorder in memory, for the runner's own tests
// (Controller.RecordPass, on both backends, is tested in sweeper_test).
type memRecorder struct {
	mu     sync.Mutex
	passes []recorded
}

type recorded struct {
	id string
	cks.SweeperPass
}

func (m *memRecorder) RecordPass(_ context.Context, id string, p cks.SweeperPass) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.passes = append(m.passes, recorded{id, p})
	return nil
}

func (m *memRecorder) all() []recorded {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.passes)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestStatusJSONShape(t *testing.T) {
	at := t0()
	st := cks.SweeperStatus{
		AgentID: "graph_health", Kind: Kind, ConfigEnabled: true, Running: true, IntervalS: 300,
		LastRunAt: &at, LastResultCount: ptr(3), LastRunDurationMS: ptr(12.5),
		LastError: ptr("boom"), RunCount: 4, DesiredRunning: ptr(true),
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"agent_id":"graph_health","kind":"sweeper","config_enabled":true,"running":true,"interval_s":300,` +
		`"last_run_at":"2025-03-04T05:06:07Z","last_result_count":3,"last_run_duration_ms":12.5,"last_error":"boom",` +
		`"run_count":4,"desired_running":true}`
	if string(b) != want {
		t.Errorf("json = %s\nwant   %s", b, want)
	}
	b, err = json.Marshal(cks.SweeperStatus{AgentID: "x", Kind: Kind, IntervalS: 60})
	if err != nil {
		t.Fatal(err)
	}
	want = `{"agent_id":"x","kind":"sweeper","config_enabled":false,"running":false,"interval_s":60,"last_run_at":null,` +
		`"last_result_count":null,"last_run_duration_ms":null,"last_error":null,"run_count":0,"desired_running":null}`
	if string(b) != want {
		t.Errorf("json of a never-run sweeper = %s\nwant   %s", b, want)
	}
}

func TestConfigDisabledRunnerNeverStarts(t *testing.T) {
	r, p := newTestRunner(t, noop("fork_detection"), Options{Interval: time.Millisecond})
	err := r.Start(context.Background())
	if !errors.Is(err, ErrDisabledByConfig) || !strings.Contains(err.Error(), "CKS_FORK_DETECTION_SWEEPER_ENABLED") {
		t.Fatalf("Start = %v, want ErrDisabledByConfig naming CKS_FORK_DETECTION_SWEEPER_ENABLED", err)
	}
	if r.Status().Running || p.entered.Load() != 0 {
		t.Fatalf("a disabled runner started a loop")
	}
}

func TestStopWaitsForTheLoopToExit(t *testing.T) {
	inPass := make(chan struct{})
	var returned bool // written by the loop before it exits, read after Stop
	sw := sweeperFunc("contradiction", func(ctx context.Context, _ int) (int, error) {
		close(inPass)
		<-ctx.Done()
		returned = true
		return 0, ctx.Err()
	})
	r, p := newTestRunner(t, sw, Options{Interval: time.Hour, ConfigEnabled: true})
	mustStart(t, r)
	recv(t, inPass, "the first pass")
	mustStop(t, r)
	if !returned || p.live.Load() != 0 {
		t.Fatalf("Stop returned before the loop exited (pass returned %v, live loops %d)", returned, p.live.Load())
	}
	st := r.Status()
	if st.Running || st.RunCount != 0 || st.LastError != nil {
		t.Fatalf("a pass cut short by Stop is not recorded: %+v", st)
	}
	mustStop(t, r) // a second Stop is a no-op
	if got, want := p.opsSnapshot(), []string{"start", "stop", "stop"}; !slices.Equal(got, want) {
		t.Errorf("lock order = %v, want %v", got, want)
	}
}

// A Stop whose context ends while the pass ignores cancellation returns the
// context's error; the next Start waits for that loop to exit before starting
// another, so there is never more than one.
func TestAbandonedStopThenStartKeepsOneLoop(t *testing.T) {
	inPass := make(chan struct{})
	release := make(chan struct{})
	sw := sweeperFunc("stale_stop_report", func(_ context.Context, call int) (int, error) {
		if call == 1 {
			close(inPass)
			<-release // ignores cancellation
		}
		return 1, nil
	})
	r, p := newTestRunner(t, sw, Options{Interval: time.Hour, ConfigEnabled: true})
	stopCtx, cancelStop := context.WithCancel(context.Background())
	defer cancelStop()
	record := r.hooks.locked
	r.hooks.locked = func(op string) {
		record(op)
		if op == "stop" {
			cancelStop() // the Stop's context ends while it holds the lock
		}
	}
	mustStart(t, r)
	recv(t, inPass, "the first pass")
	if err := r.Stop(stopCtx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stop = %v, want context.Canceled", err)
	}
	if r.Status().Running {
		t.Fatal("after an abandoned Stop the runner still reads running")
	}
	close(release)
	mustStart(t, r)
	st := p.waitFor(t, r, "a pass of the new loop", func(s cks.SweeperStatus) bool { return s.RunCount == 1 })
	if !st.Running || p.maxLive.Load() != 1 || p.entered.Load() != 2 {
		t.Fatalf("running %v, max live loops %d, loops started %d; want true, 1, 2", st.Running, p.maxLive.Load(), p.entered.Load())
	}
}

func TestPanicInSweepIsRecordedAndTheLoopGoesOn(t *testing.T) {
	release := make(chan struct{})
	sw := sweeperFunc("inference_staleness", func(ctx context.Context, call int) (int, error) {
		switch call {
		case 1:
			panic("kaboom")
		case 2:
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return 3, nil
	})
	runErrs := make(chan error, 1)
	c := clock.NewFake(t0())
	r, p := newTestRunner(t, sw, Options{
		Interval: time.Millisecond, ConfigEnabled: true, Clock: c,
		OnRun: func(_ string, _ time.Duration, _ int, err error) {
			select {
			case runErrs <- err:
			default:
			}
		},
	})
	mustStart(t, r)
	st := p.waitFor(t, r, "the panicking pass", func(s cks.SweeperStatus) bool { return s.RunCount == 1 })
	if err := recv(t, runErrs, "OnRun"); !errors.Is(err, ErrSweepPanicked) {
		t.Errorf("OnRun err = %v, want ErrSweepPanicked", err)
	}
	if got := errText(st.LastError); got != "sweep panicked: kaboom" || !st.Running || *st.LastResultCount != 0 {
		t.Fatalf("after the panic: last_error %q, running %v, count %d", got, st.Running, *st.LastResultCount)
	}
	tick(t, c, time.Millisecond)
	close(release)
	st = p.waitFor(t, r, "a pass after the panic", func(s cks.SweeperStatus) bool { return s.RunCount >= 2 })
	if st.LastError != nil || *st.LastResultCount != 3 || !st.Running {
		t.Fatalf("after a good pass: %+v", st)
	}
}

// The per-tick check: at the end of each interval the loop reads its
// override and stops itself when it is false.
func TestOverrideFalseStopsTheLoopAtTheNextTick(t *testing.T) {
	o := &atomicOverride{}
	o.set(ptr(false))
	c := clock.NewFake(t0())
	r, p := newTestRunner(t, noop("graph_health"), Options{Interval: time.Millisecond, ConfigEnabled: true, Overrides: o, Clock: c})
	mustStart(t, r)
	p.waitFor(t, r, "the first pass", func(s cks.SweeperStatus) bool { return s.RunCount == 1 })
	if o.reads.Load() != 0 {
		t.Fatalf("the override was read %d times before the interval ended", o.reads.Load())
	}
	tick(t, c, time.Millisecond)
	st := p.waitFor(t, r, "the self-stop", func(s cks.SweeperStatus) bool { return !s.Running && p.live.Load() == 0 })
	if st.RunCount != 1 || st.DesiredRunning == nil || *st.DesiredRunning || o.reads.Load() != 1 {
		t.Fatalf("status %+v, reads %d; want one pass, desired_running false, one read", st, o.reads.Load())
	}
	if got, want := p.opsSnapshot(), []string{"start", "selfstop"}; !slices.Equal(got, want) {
		t.Errorf("lock order = %v, want %v", got, want)
	}
}

// wake makes the check happen now, not after a one-hour interval; after a
// self-stop, Stop is a no-op and Start starts a fresh loop.
func TestPokeAppliesTheOverrideWithoutWaitingTheInterval(t *testing.T) {
	o := &atomicOverride{} // no row
	r, p := newTestRunner(t, noop("dependency_release"), Options{Interval: time.Hour, ConfigEnabled: true, Overrides: o})
	mustStart(t, r)
	p.waitFor(t, r, "the first pass", func(s cks.SweeperStatus) bool { return s.RunCount == 1 })

	r.wake() // no row: keeps running
	p.waitFor(t, r, "the first read", func(cks.SweeperStatus) bool { return o.reads.Load() == 1 })
	if st := r.Status(); !st.Running || st.DesiredRunning != nil {
		t.Fatalf("no row must not stop the loop: %+v", st)
	}

	o.set(ptr(false))
	r.wake()
	st := p.waitFor(t, r, "the self-stop", func(s cks.SweeperStatus) bool { return !s.Running && p.live.Load() == 0 })
	if st.RunCount != 1 || st.DesiredRunning == nil || *st.DesiredRunning {
		t.Fatalf("after the poke: %+v", st)
	}

	mustStop(t, r) // no deadlock, no-op
	o.set(ptr(true))
	mustStart(t, r)
	st = p.waitFor(t, r, "a pass of the restarted loop", func(s cks.SweeperStatus) bool { return s.RunCount == 2 })
	if !st.Running || p.maxLive.Load() != 1 {
		t.Fatalf("restart: running %v, max live loops %d", st.Running, p.maxLive.Load())
	}
	if got, want := p.opsSnapshot(), []string{"start", "selfstop", "stop", "start"}; !slices.Equal(got, want) {
		t.Errorf("lock order = %v, want %v", got, want)
	}
}

// A Stop that holds the lock while the loop is about to stop itself must not
// deadlock: the loop gives up the lock as soon as Stop cancels it.
func TestSelfStopRacingStopDoesNotDeadlock(t *testing.T) {
	o := &atomicOverride{}
	o.set(ptr(false))
	atSelfStop := make(chan struct{})
	release := make(chan struct{})
	stopLocked := make(chan struct{})
	r, p := newTestRunner(t, noop("lease_reaper"), Options{Interval: time.Hour, ConfigEnabled: true, Overrides: o})
	r.hooks.selfStop = func() {
		close(atSelfStop)
		<-release
	}
	record := r.hooks.locked
	var once sync.Once // the test's cleanup stops again
	r.hooks.locked = func(op string) {
		record(op)
		if op == "stop" {
			once.Do(func() { close(stopLocked) })
		}
	}
	mustStart(t, r)
	p.waitFor(t, r, "the first pass", func(s cks.SweeperStatus) bool { return s.RunCount == 1 })
	r.wake()
	recv(t, atSelfStop, "the loop to decide to stop itself")
	stopped := make(chan error, 1)
	go func() { stopped <- r.Stop(context.Background()) }()
	recv(t, stopLocked, "Stop to take the lock")
	close(release) // the loop now tries to take the lock Stop holds
	if err := recv(t, stopped, "Stop to return"); err != nil {
		t.Fatal(err)
	}
	if st := r.Status(); st.Running || p.live.Load() != 0 {
		t.Fatalf("after Stop: running %v, live loops %d", st.Running, p.live.Load())
	}
	if got, want := p.opsSnapshot(), []string{"start", "stop"}; !slices.Equal(got, want) {
		t.Errorf("lock order = %v, want %v (the loop must not have taken the lock)", got, want)
	}
}

// A Start that takes the lock while the loop's override read is in flight
// wins over that read: start_agent writes desired_running=true before it
// starts the local runner, so a false read that began earlier is stale.
func TestStartDuringOverrideReadWinsOverAStaleFalse(t *testing.T) {
	inRead := make(chan struct{})
	release := make(chan struct{})
	var reads int // only the loop goroutine reads the override
	o := overridesFunc(func(context.Context, string) (*bool, error) {
		reads++
		if reads == 1 {
			close(inRead)
			<-release
		}
		return ptr(false), nil
	})
	r, p := newTestRunner(t, noop("fork_detection"), Options{Interval: time.Hour, ConfigEnabled: true, Overrides: o})
	mustStart(t, r)
	p.waitFor(t, r, "the first pass", func(s cks.SweeperStatus) bool { return s.RunCount == 1 })
	r.wake()
	recv(t, inRead, "the override read")
	mustStart(t, r) // already running: a no-op that still takes the lock
	close(release)
	r.wake() // the second read (false, after no newer Start) stops the loop
	st := p.waitFor(t, r, "the self-stop", func(s cks.SweeperStatus) bool { return !s.Running && p.live.Load() == 0 })
	if reads != 2 {
		t.Fatalf("the loop stopped after %d override reads, want 2 (the stale first read must not stop it)", reads)
	}
	if st.RunCount != 1 || p.entered.Load() != 1 {
		t.Fatalf("status %+v, loops started %d", st, p.entered.Load())
	}
	if got, want := p.opsSnapshot(), []string{"start", "start", "selfstop"}; !slices.Equal(got, want) {
		t.Errorf("lock order = %v, want %v", got, want)
	}
}

func TestOverrideReadErrorIsRecordedAndTheLoopContinues(t *testing.T) {
	t.Run("poked", func(t *testing.T) {
		var reads int
		o := overridesFunc(func(context.Context, string) (*bool, error) {
			reads++
			return nil, errors.New("store down")
		})
		r, p := newTestRunner(t, noop("contradiction"), Options{Interval: time.Hour, ConfigEnabled: true, Overrides: o})
		mustStart(t, r)
		p.waitFor(t, r, "the first pass", func(s cks.SweeperStatus) bool { return s.RunCount == 1 })
		r.wake()
		st := p.waitFor(t, r, "the read error", func(s cks.SweeperStatus) bool { return s.LastError != nil })
		if got := errText(st.LastError); got != "read override: store down" || !st.Running || p.live.Load() != 1 {
			t.Fatalf("last_error %q, running %v, live loops %d", got, st.Running, p.live.Load())
		}
		mustStop(t, r)
		if reads != 1 {
			t.Errorf("reads = %d, want 1", reads)
		}
	})
	t.Run("ticking", func(t *testing.T) {
		o := overridesFunc(func(context.Context, string) (*bool, error) { return nil, errors.New("store down") })
		c := clock.NewFake(t0())
		r, p := newTestRunner(t, noop("contradiction"), Options{Interval: time.Millisecond, ConfigEnabled: true, Overrides: o, Clock: c})
		mustStart(t, r)
		for range 2 {
			tick(t, c, time.Millisecond)
		}
		st := p.waitFor(t, r, "passes after failed reads", func(s cks.SweeperStatus) bool { return s.RunCount >= 3 })
		if !st.Running || p.entered.Load() != 1 {
			t.Fatalf("running %v, loops started %d", st.Running, p.entered.Load())
		}
	})
}

// TestIntervalIsOnTheClock: the wait between passes is timed by the
// runner's clock: no second pass however long the test waits in real time,
// one as soon as the clock reaches the end of the interval, not before.
func TestIntervalIsOnTheClock(t *testing.T) {
	c := clock.NewFake(t0())
	r, p := newTestRunner(t, noop("dependency_release"), Options{Interval: time.Minute, ConfigEnabled: true, Clock: c})
	mustStart(t, r)
	p.waitFor(t, r, "the first pass", func(s cks.SweeperStatus) bool { return s.RunCount == 1 })
	tick(t, c, time.Minute-time.Nanosecond)
	if err := c.WaitArmed(waitCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	if st := r.Status(); st.RunCount != 1 {
		t.Fatalf("a pass ran before the interval ended: %+v", st)
	}
	c.Advance(time.Nanosecond)
	st := p.waitFor(t, r, "the second pass", func(s cks.SweeperStatus) bool { return s.RunCount == 2 })
	if want := t0().Add(time.Minute); !st.LastRunAt.Equal(want) {
		t.Fatalf("second pass at %v, want %v", st.LastRunAt, want)
	}
}

// steppedClock is a fake whose wall clock steps back an hour after its
// first reading, as a system clock corrected by NTP does; its monotonic
// reading does not.
type steppedClock struct {
	*clock.Fake
	reads int // Now calls; only the loop goroutine reads it
}

func (s *steppedClock) Now() time.Time {
	s.reads++
	if s.reads > 1 {
		return s.Fake.Now().Add(-time.Hour)
	}
	return s.Fake.Now()
}

// TestPassDurationIsMonotonic: a pass's duration is measured on the
// monotonic reading, so a wall-clock step during the pass does not make it
// negative (the UTC Now strips the monotonic reading).
func TestPassDurationIsMonotonic(t *testing.T) {
	c := &steppedClock{Fake: clock.NewFake(t0())}
	sw := sweeperFunc("lease_reaper", func(context.Context, int) (int, error) {
		c.Advance(250 * time.Millisecond)
		return 1, nil
	})
	r, p := newTestRunner(t, sw, Options{Interval: time.Hour, ConfigEnabled: true, Clock: c})
	mustStart(t, r)
	st := p.waitFor(t, r, "the first pass", func(s cks.SweeperStatus) bool { return s.RunCount == 1 })
	if *st.LastRunDurationMS != 250 || !st.LastRunAt.Equal(t0()) {
		t.Fatalf("pass at %v took %vms, want at %v, 250ms", st.LastRunAt, *st.LastRunDurationMS, t0())
	}
}

// leadership is a settable Leadership.
type leadership struct{ held atomic.Bool }

func (l *leadership) IsLeader() bool { return l.held.Load() }

// A runner whose hub is not the maintenance leader runs no pass and reads
// Standby; once its hub leads, RunNow runs a pass without waiting out the
// hour-long interval.
func TestStandbyRunnerPassesOnlyAsLeader(t *testing.T) {
	var calls atomic.Int32
	l := &leadership{}
	sw := sweeperFunc("lease_reaper", func(context.Context, int) (int, error) { calls.Add(1); return 0, nil })
	r, p := newTestRunner(t, sw, Options{Interval: time.Hour, ConfigEnabled: true, Leader: l})
	mustStart(t, r)
	st := p.waitFor(t, r, "standby", func(s cks.SweeperStatus) bool { return s.Standby })
	if calls.Load() != 0 || st.RunCount != 0 || !st.Running {
		t.Fatalf("a standby runner: %d calls, status %+v; want running, no pass", calls.Load(), st)
	}
	l.held.Store(true)
	r.RunNow()
	st = p.waitFor(t, r, "a pass as leader", func(s cks.SweeperStatus) bool { return s.RunCount == 1 })
	if st.Standby || calls.Load() != 1 {
		t.Fatalf("as leader: %d calls, status %+v; want one pass, not standby", calls.Load(), st)
	}
}

// scheduled is a sweeper that asks for its next pass at a time.
type scheduled struct {
	*funcSweeper
	next time.Time
}

func (s scheduled) NextPass() time.Time { return s.next }

// TestSchedulerPassesAtItsNextPass: a Scheduler's runner passes at its
// NextPass when that comes before the end of the interval (the lease
// reaper at the next attempt deadline), and not before it.
func TestSchedulerPassesAtItsNextPass(t *testing.T) {
	c := clock.NewFake(t0())
	sw := scheduled{funcSweeper: noop("lease_reaper"), next: t0().Add(10 * time.Second)}
	r, p := newTestRunner(t, sw, Options{Interval: time.Hour, ConfigEnabled: true, Clock: c})
	mustStart(t, r)
	p.waitFor(t, r, "the first pass", func(s cks.SweeperStatus) bool { return s.RunCount == 1 })
	tick(t, c, 10*time.Second-time.Nanosecond)
	if err := c.WaitArmed(waitCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	if st := r.Status(); st.RunCount != 1 {
		t.Fatalf("a pass ran before the sweeper's next pass: %+v", st)
	}
	c.Advance(time.Nanosecond)
	st := p.waitFor(t, r, "the pass at NextPass", func(s cks.SweeperStatus) bool { return s.RunCount == 2 })
	if want := t0().Add(10 * time.Second); !st.LastRunAt.Equal(want) {
		t.Fatalf("second pass at %v, want %v (its NextPass, not the interval's end)", st.LastRunAt, want)
	}
	// A NextPass already reached is spent: the loop waits its interval.
	if err := c.WaitArmed(waitCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	if st := r.Status(); st.RunCount != 2 {
		t.Fatalf("passes after a spent NextPass: %+v", st)
	}
}
