package liveness_test

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/waitfor"
)

// tick waits until the reporter waits on c for its next tick, then moves c
// by d. Once the tick it fires has written and read back the row, the
// reporter waits on c again (WaitArmed(1) returns).
func tick(t testing.TB, c *clock.Fake, d time.Duration) {
	t.Helper()
	if err := c.WaitArmed(waitfor.Ctx(t), 1); err != nil {
		t.Fatalf("the reporter never waited on its clock: %v", err)
	}
	c.Advance(d)
}

func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

func row(t testing.TB, st *backend.Backend, id string) cks.AgentLiveness {
	t.Helper()
	r, err := st.Liveness.GetAgentLiveness(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestInstanceIDIsAUUID(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, b := liveness.NewInstanceID(), liveness.NewInstanceID()
	if !re.MatchString(a) || a == b {
		t.Fatalf("ids %q, %q", a, b)
	}
}

// TestReporterLifecycle: the first write, the current task, the tick, and
// the graceful exit that reads stopped at once.
func TestReporterLifecycle(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		c := clock.NewFake(backendtest.T0)
		svc := liveness.NewService(st.Driver(), c)
		r := liveness.NewReporter(st.Liveness, liveness.ReporterConfig{Changes: st.Changes, Kind: "critic", Interval: 20 * time.Millisecond, Clock: c,
			TaskTypes: []string{"critique", "a,b"}})
		if err := r.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		first := row(t, st, r.InstanceID())
		if !first.StartedAt.Equal(backendtest.T0) || !first.LastHeartbeatAt.Equal(backendtest.T0) ||
			first.ProcessKind != "critic" || first.LivenessIntervalS != 0.02 || first.PID == 0 {
			t.Fatalf("first heartbeat %+v", first)
		}
		// The types it claims are on its row, as given (a comma is no separator).
		if !slices.Equal(first.TaskTypes, []string{"critique", "a,b"}) {
			t.Fatalf("task types %q, want [critique a,b]", first.TaskTypes)
		}
		// Several tasks in hand (--concurrency): the row shows the oldest,
		// then the next once that is released, then none.
		current := func(want int64, wantType string) func() bool {
			return func() bool {
				got := row(t, st, r.InstanceID())
				if want == 0 {
					return got.CurrentTaskID == nil && got.CurrentTaskType == ""
				}
				return got.CurrentTaskID != nil && *got.CurrentTaskID == want && got.CurrentTaskType == wantType
			}
		}
		r.HoldTask(42, "critique")
		r.HoldTask(43, "a,b")
		waitfor.Until(t, "the oldest task in hand written", current(42, "critique"))
		r.ReleaseTask(42)
		waitfor.Until(t, "the next task in hand written", current(43, "a,b"))
		r.ReleaseTask(43)
		waitfor.Until(t, "no task in hand written", current(0, ""))
		r.HoldTask(42, "critique")
		waitfor.Until(t, "the current task written", current(42, "critique"))
		if got := row(t, st, r.InstanceID()); !got.LastHeartbeatAt.Equal(backendtest.T0) {
			t.Fatalf("heartbeat %v before the clock moved", got.LastHeartbeatAt)
		}
		tick(t, c, time.Minute)                                // the interval (20ms) is on c: the tick comes when c passes it
		if err := c.WaitArmed(waitfor.Ctx(t), 1); err != nil { // the tick is done
			t.Fatal(err)
		}
		if got := row(t, st, r.InstanceID()); !got.LastHeartbeatAt.Equal(backendtest.T0.Add(time.Minute)) {
			t.Fatalf("heartbeat %v after the tick, want T0+1m", got.LastHeartbeatAt)
		}
		if p, _ := svc.ProcessStatus(context.Background(), "critic"); p.Status != cks.ProcessAlive {
			t.Fatalf("status %s while running", p.Status)
		}
		if err := r.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		last := row(t, st, r.InstanceID())
		// The exit at the clock's time, which is also the last heartbeat:
		// no heartbeat it never made.
		at := backendtest.T0.Add(time.Minute)
		if !last.ExitedAt.Equal(at) || !last.LastHeartbeatAt.Equal(at) || last.CurrentTaskID != nil || !last.StartedAt.Equal(backendtest.T0) {
			t.Fatalf("final heartbeat %+v, want exited and heartbeat at %v", last, at)
		}
		if p, _ := svc.ProcessStatus(context.Background(), "critic"); p.Status != cks.ProcessStopped || !p.ExitedAt.Equal(at) {
			t.Fatalf("status %s, exited %v right after a graceful exit, want stopped, exited", p.Status, p.ExitedAt)
		}
	})
}

// TestReporterStopRequest: a stop request made through another handle
// reaches OnStopRequested through the change watch (interval one hour, so
// the tick cannot be what delivered it), and through the tick alone when
// the watch is off.
func TestReporterStopRequest(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		for _, tc := range []struct {
			name     string
			interval time.Duration
			noFast   bool
		}{
			{"fast path", time.Hour, false},
			{"tick only", 20 * time.Millisecond, true}, // on the fake clock: ticks when the test moves it
		} {
			t.Run(tc.name, func(t *testing.T) {
				st, op := open(t), open(t)
				stopped := make(chan struct{})
				var calls atomic.Int32
				c := clock.NewFake(backendtest.T0)
				r := liveness.NewReporter(st.Liveness, liveness.ReporterConfig{Changes: st.Changes, Kind: "pipeline", Interval: tc.interval,
					Clock: c, NoFastPath: tc.noFast, OnStopRequested: func() {
						if calls.Add(1) == 1 {
							close(stopped)
						}
					}})
				if err := r.Start(context.Background()); err != nil {
					t.Fatal(err)
				}
				defer r.Stop(context.Background())
				begin := time.Now()
				if found, err := op.Liveness.RequestAgentStop(context.Background(), r.InstanceID()); !found || err != nil {
					t.Fatalf("RequestAgentStop = %v, %v", found, err)
				}
				if tc.noFast {
					tick(t, c, tc.interval) // the tick reads the row back
				}
				select {
				case <-stopped:
					t.Logf("%s, %s: stop request seen after %s", op.Dialect(), tc.name, time.Since(begin))
				case <-time.After(time.Minute):
					t.Fatal("OnStopRequested was not called")
				}
				// Later wakes and ticks do not call it again.
				op.Liveness.RequestAgentStop(context.Background(), r.InstanceID())
				tick(t, c, tc.interval)
				if err := c.WaitArmed(waitfor.Ctx(t), 1); err != nil { // that tick is done
					t.Fatal(err)
				}
				if err := r.Stop(context.Background()); err != nil {
					t.Fatal(err)
				}
				if n := calls.Load(); n != 1 {
					t.Fatalf("OnStopRequested called %d times", n)
				}
			})
		}
	})
}

// flaky fails every liveness write while down is set: the store is
// unreachable for a while. Each failed write is reported on failed.
type flaky struct {
	*liveness.Service
	down   atomic.Bool
	failed chan struct{}
}

func (f *flaky) UpsertAgentLiveness(ctx context.Context, r cks.AgentLiveness) error {
	if f.down.Load() {
		f.failed <- struct{}{}
		return errors.New("connection refused")
	}
	return f.Service.UpsertAgentLiveness(ctx, r)
}

// TestReporterSurvivesStoreOutage: failed ticks are logged and retried; the
// reporter neither stops the process nor gives up.
func TestReporterSurvivesStoreOutage(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		b := open(t)
		st := &flaky{Service: b.Liveness, failed: make(chan struct{}, 4)}
		c := clock.NewFake(backendtest.T0)
		r := liveness.NewReporter(st, liveness.ReporterConfig{Kind: "critic", Interval: 10 * time.Millisecond, Clock: c,
			OnStopRequested: func() { t.Error("an outage asked the process to stop") }})
		if err := r.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer r.Stop(context.Background())
		st.down.Store(true)
		tick(t, c, time.Minute)
		recv(t, st.failed, "the failed tick")
		r.HoldTask(1, "x") // forces a write attempt now
		recv(t, st.failed, "the failed write of the current task")
		st.down.Store(false)
		if got := row(t, b, r.InstanceID()); !got.LastHeartbeatAt.Equal(backendtest.T0) {
			t.Fatalf("heartbeat %v during the outage", got.LastHeartbeatAt)
		}
		tick(t, c, time.Minute)
		if err := c.WaitArmed(waitfor.Ctx(t), 1); err != nil { // the tick is done
			t.Fatal(err)
		}
		if got := row(t, b, r.InstanceID()); !got.LastHeartbeatAt.Equal(backendtest.T0.Add(2*time.Minute)) ||
			got.CurrentTaskID == nil || *got.CurrentTaskID != 1 {
			t.Fatalf("after the outage: %+v; want the heartbeat at T0+2m with task 1", got)
		}
	})
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestBadTaskTypesRefused: a task type a backend cannot store is refused
// naming task_types, and nothing is written.
func TestBadTaskTypesRefused(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		r := cks.AgentLiveness{InstanceID: "i-bad", ProcessKind: "critic", Hostname: "h", PID: 1, LivenessIntervalS: 30,
			StartedAt: backendtest.T0, LastHeartbeatAt: backendtest.T0, TaskTypes: []string{"ok", "bad\x00"}}
		var fe *cks.FieldError
		if err := st.Liveness.UpsertAgentLiveness(t.Context(), r); !errors.As(err, &fe) || fe.Field != "task_types" {
			t.Fatalf("upsert with a NUL in a task type: %v, want a FieldError of task_types", err)
		}
		if _, err := st.Liveness.GetAgentLiveness(t.Context(), "i-bad"); !errors.Is(err, cks.ErrNotFound) {
			t.Fatalf("the refused row was written: %v", err)
		}
	})
}
