package liveness_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/service/liveness"
)

func newService(t testing.TB) (*liveness.Service, *backend.Backend, *clock.Fake) {
	t.Helper()
	s, err := backend.Open(context.Background(), filepath.Join(t.TempDir(), "cks.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := clock.NewFake(backendtest.T0)
	return liveness.NewService(s.Driver(), c), s, c
}

func TestStatusFlipsAtThreeIntervals(t *testing.T) {
	r := backendtest.Liveness("i", "critic", 0) // interval 30 s, heartbeat at T0
	cases := []struct {
		after time.Duration
		want  cks.ProcessStatus
	}{
		{0, cks.ProcessAlive},
		{89 * time.Second, cks.ProcessAlive},
		{90 * time.Second, cks.ProcessAlive}, // exactly 3 × 30 s: still alive
		{90*time.Second + time.Nanosecond, cks.ProcessStopped},
		{90*time.Second + time.Microsecond, cks.ProcessStopped},
		{time.Hour, cks.ProcessStopped},
	}
	for _, c := range cases {
		if got := liveness.StatusAt(r, backendtest.T0.Add(c.after)); got != c.want {
			t.Errorf("StatusAt(heartbeat + %v) = %s, want %s", c.after, got, c.want)
		}
	}
}

func TestListProcessesUsesInjectedClock(t *testing.T) {
	svc, s, c := newService(t)
	fast := backendtest.Liveness("fast", "critic", 0)
	fast.LivenessIntervalS = 2 // TTL 6 s
	slow := backendtest.Liveness("slow", "fork_resolution", 0)
	slow.LivenessIntervalS = 60 // TTL 180 s
	backendtest.MustUpsert(t, s, fast)
	backendtest.MustUpsert(t, s, slow)

	statuses := func() map[string]cks.ProcessStatus {
		t.Helper()
		ps, err := svc.ListProcesses(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]cks.ProcessStatus{}
		for _, p := range ps {
			out[p.InstanceID] = p.Status
		}
		return out
	}
	c.Set(backendtest.T0.Add(6 * time.Second))
	if got := statuses(); got["fast"] != cks.ProcessAlive || got["slow"] != cks.ProcessAlive {
		t.Fatalf("at +6s: %v, want both alive", got)
	}
	c.Advance(time.Microsecond)
	if got := statuses(); got["fast"] != cks.ProcessStopped || got["slow"] != cks.ProcessAlive {
		t.Fatalf("at +6s+1µs: %v, want fast stopped, slow alive", got)
	}
	c.Set(backendtest.T0.Add(180*time.Second + time.Microsecond))
	if got := statuses(); got["slow"] != cks.ProcessStopped {
		t.Fatalf("at +180s+1µs: %v, want slow stopped", got)
	}
	// A fresh heartbeat brings it back.
	fast.LastHeartbeatAt = c.Now()
	backendtest.MustUpsert(t, s, fast)
	if got := statuses(); got["fast"] != cks.ProcessAlive {
		t.Fatalf("after a new heartbeat: %v, want fast alive", got)
	}
}

func TestProcessStatus(t *testing.T) {
	svc, s, c := newService(t)
	backendtest.MustUpsert(t, s, backendtest.Liveness("c-old", "critic", 0))
	backendtest.MustUpsert(t, s, backendtest.Liveness("c-new", "critic", time.Minute))
	c.Set(backendtest.T0.Add(time.Minute))

	p, err := svc.ProcessStatus(context.Background(), "critic")
	if err != nil {
		t.Fatal(err)
	}
	if p.InstanceID != "c-new" || p.Status != cks.ProcessAlive || p.ProcessKind != "critic" {
		t.Fatalf("critic = %+v, want c-new alive", p)
	}

	p, err = svc.ProcessStatus(context.Background(), "enrichment")
	if err != nil {
		t.Fatalf("never-started kind is an error: %v", err)
	}
	if p.Status != cks.ProcessNotFound || p.ProcessKind != "enrichment" || p.InstanceID != "" {
		t.Fatalf("enrichment = %+v, want not_found", p)
	}

	// Any kind may report (report_process): one that never did is not
	// found; a text that cannot be a kind is a FieldError.
	if p, err := svc.ProcessStatus(context.Background(), "summarizer"); err != nil || p.Status != cks.ProcessNotFound {
		t.Fatalf("summarizer = %+v, %v; want not_found", p, err)
	}
	_, err = svc.ProcessStatus(context.Background(), "a/b")
	if fe, ok := errors.AsType[*cks.FieldError](err); !ok || fe.Field != "process_kind" || !errors.Is(err, cks.ErrInvalid) {
		t.Fatalf("a/b: err = %v, want a FieldError naming process_kind", err)
	}
}

func TestWatchSignalsRowAndStatusChanges(t *testing.T) {
	svc, s, c := newService(t)
	ctx, cancel := context.WithCancel(context.Background())
	changed := make(chan struct{}, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		svc.Watch(ctx, time.Millisecond, func() { changed <- struct{}{} }, func(err error) { t.Error(err) })
	}()
	defer func() { cancel(); <-done }()

	wait := func(what string) {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatalf("no change signalled after %s", what)
		}
	}
	drain := func() {
		for {
			select {
			case <-changed:
			default:
				return
			}
		}
	}
	wait("start") // the first read always signals
	backendtest.MustUpsert(t, s, backendtest.Liveness("i", "critic", 0))
	c.Advance(time.Millisecond) // the next read, on the service's clock
	wait("upsert")
	drain()
	c.Advance(91 * time.Second) // no row change, but alive -> stopped
	wait("status flip")
	drain()
	// A stop request (made by any hub or process) changes what a viewer sees.
	if found, err := s.Liveness.RequestAgentStop(context.Background(), "i"); err != nil || !found {
		t.Fatalf("RequestAgentStop = %v, %v", found, err)
	}
	c.Advance(time.Millisecond)
	wait("stop request")
}

// TestRequestStop: a stop goes to the newest alive instance of a kind, or to
// an instance by id; anything not alive is found:false (nothing written), a
// kind that never reported too; a text that is no kind is an error. Both
// backends.
func TestRequestStop(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		c := clock.NewFake(backendtest.T0.Add(time.Minute))
		svc := liveness.NewService(st.Driver(), c)
		backendtest.MustUpsert(t, st, backendtest.Liveness("critic-old", "critic", -time.Hour)) // stopped long ago
		backendtest.MustUpsert(t, st, backendtest.Liveness("critic-new", "critic", 30*time.Second))
		backendtest.MustUpsert(t, st, backendtest.Liveness("pipeline-dead", "pipeline", -time.Hour))
		ctx := context.Background()
		for _, tc := range []struct {
			target string
			want   cks.ProcessStopResult
		}{
			{"critic", cks.ProcessStopResult{Found: true, InstanceID: "critic-new", ProcessKind: "critic"}},
			{"pipeline", cks.ProcessStopResult{InstanceID: "pipeline-dead", ProcessKind: "pipeline"}},
			{"enrichment", cks.ProcessStopResult{ProcessKind: "enrichment"}}, // never ran
			{"critic-old", cks.ProcessStopResult{InstanceID: "critic-old", ProcessKind: "critic"}},
			{"critic-new", cks.ProcessStopResult{Found: true, InstanceID: "critic-new", ProcessKind: "critic"}},
		} {
			got, err := svc.RequestStop(ctx, tc.target)
			if err != nil || got != tc.want {
				t.Errorf("RequestStop(%q) = %+v, %v; want %+v", tc.target, got, err, tc.want)
			}
		}
		for id, want := range map[string]string{"critic-new": cks.DesiredStopRequested, "critic-old": "", "pipeline-dead": ""} {
			if r, _ := st.Liveness.GetAgentLiveness(ctx, id); r.DesiredState != want {
				t.Errorf("%s desired_state %q, want %q", id, r.DesiredState, want)
			}
		}
		if got, err := svc.RequestStop(ctx, "critics"); err != nil || got != (cks.ProcessStopResult{ProcessKind: "critics"}) {
			t.Errorf("a kind that never reported: %+v, %v", got, err)
		}
		if _, err := svc.RequestStop(ctx, "critic/x"); !errors.Is(err, cks.ErrInvalid) {
			t.Errorf("no kind: %v", err)
		}
	})
}

// TestRecordExited: an instance recorded as exited by the process that
// reaped it reads stopped at once, as a graceful exit leaves it — exited
// at the reaper's clock, its last heartbeat kept, no task in hand — its other columns (started_at, the
// stop request) kept; an unknown instance is false and writes nothing, a
// malformed id a FieldError. Both backends.
func TestRecordExited(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		c := clock.NewFake(backendtest.T0)
		svc := liveness.NewService(st.Driver(), c)
		ctx := context.Background()
		r := backendtest.Liveness("killed-1", "exec", 0)
		task := int64(7)
		r.CurrentTaskID, r.CurrentTaskType = &task, "build"
		backendtest.MustUpsert(t, st, r)
		if _, err := svc.RequestAgentStop(ctx, "killed-1"); err != nil {
			t.Fatal(err)
		}
		if p, _ := svc.ProcessStatus(ctx, "exec"); p.Status != cks.ProcessAlive {
			t.Fatalf("before: %s, want alive", p.Status)
		}
		got, found, err := svc.RecordExited(ctx, "killed-1")
		if err != nil || !found || !got.ExitedAt.Equal(backendtest.T0) || !got.LastHeartbeatAt.Equal(r.LastHeartbeatAt) ||
			got.CurrentTaskID != nil {
			t.Fatalf("RecordExited = %+v, %v, %v", got, found, err)
		}
		p, err := svc.ProcessStatus(ctx, "exec")
		if err != nil || p.Status != cks.ProcessStopped || !p.ExitedAt.Equal(backendtest.T0) || p.CurrentTaskID != nil ||
			p.CurrentTaskType != "" || !p.StartedAt.Equal(r.StartedAt) || p.DesiredState != cks.DesiredStopRequested {
			t.Fatalf("after: %+v %v; want stopped, exited at T0, no task, started_at and desired_state kept", p, err)
		}
		if want := liveness.Exited(r, backendtest.T0); !want.ExitedAt.Equal(p.ExitedAt) || want.CurrentTaskID != nil {
			t.Fatalf("Exited(row) = %+v, not the row RecordExited wrote", want)
		}
		if _, found, err := svc.RecordExited(ctx, "never-reported"); found || err != nil {
			t.Fatalf("RecordExited of an unknown instance = %v, %v; want false, nil", found, err)
		}
		if rows, _ := svc.ListAgentLiveness(ctx); len(rows) != 1 {
			t.Fatalf("%d rows after recording an unknown instance, want 1", len(rows))
		}
		if _, _, err := svc.RecordExited(ctx, "bad\x00id"); !cks.IsFieldError(err, "instance_id") {
			t.Fatalf("RecordExited of a malformed id = %v, want a FieldError", err)
		}
	})
}

// TestRecordAllExited: every instance alive by its row is recorded exited
// at the clock (what a restore does to the rows of its backup), the
// stopped ones are left as they were, and a second call finds none. Both
// backends.
func TestRecordAllExited(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		c := clock.NewFake(backendtest.T0.Add(time.Minute))
		svc := liveness.NewService(st.Driver(), c)
		ctx := context.Background()
		for i, id := range []string{"a", "b", "c"} {
			backendtest.MustUpsert(t, st, backendtest.Liveness(id, "exec", time.Duration(i)*time.Second))
		}
		stale := backendtest.Liveness("stale", "critic", -time.Hour)
		backendtest.MustUpsert(t, st, stale)
		n, err := svc.RecordAllExited(ctx)
		if err != nil || n != 3 {
			t.Fatalf("RecordAllExited = %d, %v; want the 3 alive", n, err)
		}
		rows, err := svc.ListAgentLiveness(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			exited := !r.ExitedAt.IsZero()
			if want := r.InstanceID != "stale"; exited != want || exited && !r.ExitedAt.Equal(c.Now()) {
				t.Errorf("%s: exited at %v, want exited=%v at %v", r.InstanceID, r.ExitedAt, want, c.Now())
			}
			if liveness.StatusAt(r, c.Now()) != cks.ProcessStopped {
				t.Errorf("%s reads %s", r.InstanceID, liveness.StatusAt(r, c.Now()))
			}
		}
		if n, err := svc.RecordAllExited(ctx); n != 0 || err != nil {
			t.Fatalf("second RecordAllExited = %d, %v; want 0", n, err)
		}
	})
}

// TestExited: an instance that exited reads stopped whatever its heartbeat
// says, with its exit time, and is not asked to stop; a row an older cks
// wrote at exit (its heartbeat backdated to the epoch) reads exited at its
// start, with no heartbeat from 1970 in any view; an exit before the start
// is refused, naming exited_at. Both backends.
func TestExited(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		c := clock.NewFake(backendtest.T0.Add(time.Second))
		svc := liveness.NewService(st.Driver(), c)
		ctx := context.Background()
		gone := backendtest.Liveness("critic-gone", "critic", 0)
		gone.ExitedAt = backendtest.T0
		backendtest.MustUpsert(t, st, gone)
		old := backendtest.Liveness("pipeline-old", "pipeline", -time.Hour)
		old.LastHeartbeatAt = time.Unix(0, 0).UTC()
		backendtest.MustUpsert(t, st, old)

		for _, tc := range []struct {
			kind              string
			exited, heartbeat time.Time
		}{
			{"critic", backendtest.T0, backendtest.T0},
			{"pipeline", old.StartedAt, old.StartedAt},
		} {
			p, err := svc.ProcessStatus(ctx, tc.kind)
			if err != nil || p.Status != cks.ProcessStopped || !p.ExitedAt.Equal(tc.exited) || !p.LastHeartbeatAt.Equal(tc.heartbeat) {
				t.Errorf("%s: %+v, %v; want stopped, exited %v, heartbeat %v", tc.kind, p, err, tc.exited, tc.heartbeat)
			}
			b, _ := json.Marshal(p)
			if !strings.Contains(string(b), `"exited_at":"`) || strings.Contains(string(b), "1970") {
				t.Errorf("%s as JSON: %s", tc.kind, b)
			}
			if res, err := svc.RequestStop(ctx, tc.kind); err != nil || res.Found {
				t.Errorf("stop of an exited %s: %+v, %v; want found false", tc.kind, res, err)
			}
		}
		bad := backendtest.Liveness("critic-bad", "critic", 0)
		bad.ExitedAt = backendtest.T0.Add(-time.Second)
		var fe *cks.FieldError
		if err := st.Liveness.UpsertAgentLiveness(ctx, bad); !errors.As(err, &fe) || fe.Field != "exited_at" {
			t.Errorf("an exit before the start: %v, want a FieldError naming exited_at", err)
		}
	})
}
