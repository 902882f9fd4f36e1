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
	"github.com/cks-dev/cks/backend"
	"github.com/cks-dev/cks/backend/backendtest"
	"github.com/cks-dev/cks/clock"
	"github.com/cks-dev/cks/liveness"
	"github.com/cks-dev/cks/store/storetest"
)

func newService(t testing.TB) (*liveness.Service, *backend.Backend, *clock.Fake) {
	t.Helper()
	s, err := backend.Open(context.Background(), filepath.Join(t.TempDir(), "cks.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := clock.NewFake(storetest.T0)
	return liveness.NewService(s.Driver(), c), s, c
}

func TestStatusFlipsAtThreeIntervals(t *testing.T) {
	r := storetest.Liveness("i", "critic", 0) // interval 30 s, heartbeat at T0
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
		if got := liveness.StatusAt(r, storetest.T0.Add(c.after)); got != c.want {
			t.Errorf("StatusAt(heartbeat + %v) = %s, want %s", c.after, got, c.want)
		}
	}
}

func TestListProcessesUsesInjectedClock(t *testing.T) {
	svc, s, c := newService(t)
	fast := storetest.Liveness("fast", "critic", 0)
	fast.LivenessIntervalS = 2 // TTL 6 s
	slow := storetest.Liveness("slow", "fork_resolution", 0)
	slow.LivenessIntervalS = 60 // TTL 180 s
	storetest.MustUpsert(t, s, fast)
	storetest.MustUpsert(t, s, slow)

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
	c.Set(storetest.T0.Add(6 * time.Second))
	if got := statuses(); got["fast"] != cks.ProcessAlive || got["slow"] != cks.ProcessAlive {
		t.Fatalf("at +6s: %v, want both alive", got)
	}
	c.Advance(time.Microsecond)
	if got := statuses(); got["fast"] != cks.ProcessStopped || got["slow"] != cks.ProcessAlive {
		t.Fatalf("at +6s+1µs: %v, want fast stopped, slow alive", got)
	}
	c.Set(storetest.T0.Add(180*time.Second + time.Microsecond))
	if got := statuses(); got["slow"] != cks.ProcessStopped {
		t.Fatalf("at +180s+1µs: %v, want slow stopped", got)
	}
	// A fresh heartbeat brings it back.
	fast.LastHeartbeatAt = c.Now()
	storetest.MustUpsert(t, s, fast)
	if got := statuses(); got["fast"] != cks.ProcessAlive {
		t.Fatalf("after a new heartbeat: %v, want fast alive", got)
	}
}

func TestProcessStatus(t *testing.T) {
	svc, s, c := newService(t)
	storetest.MustUpsert(t, s, storetest.Liveness("c-old", "critic", 0))
	storetest.MustUpsert(t, s, storetest.Liveness("c-new", "critic", time.Minute))
	c.Set(storetest.T0.Add(time.Minute))

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

	_, err = svc.ProcessStatus(context.Background(), "critc")
	var uk *liveness.UnknownKindError
	if !errors.As(err, &uk) || !errors.Is(err, cks.ErrInvalid) {
		t.Fatalf("unknown kind: err = %v, want UnknownKindError matching ErrInvalid", err)
	}
}

func TestCountAlive(t *testing.T) {
	ps := []cks.Process{
		{AgentLiveness: cks.AgentLiveness{ProcessKind: "critic"}, Status: cks.ProcessAlive},
		{AgentLiveness: cks.AgentLiveness{ProcessKind: "critic"}, Status: cks.ProcessAlive},
		{AgentLiveness: cks.AgentLiveness{ProcessKind: "critic"}, Status: cks.ProcessStopped},
		{AgentLiveness: cks.AgentLiveness{ProcessKind: "pipeline"}, Status: cks.ProcessStopped},
	}
	got := liveness.CountAlive(ps)
	if got["critic"] != 2 || got["pipeline"] != 0 || len(got) != len(liveness.KnownKinds()) {
		t.Fatalf("CountAlive = %v", got)
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
	storetest.MustUpsert(t, s, storetest.Liveness("i", "critic", 0))
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
// an instance by id; anything not alive is found:false (nothing written); an
// unknown kind is an error listing the kinds. Both backends.
func TestRequestStop(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open storetest.Opener) {
		st := open(t)
		c := clock.NewFake(storetest.T0.Add(time.Minute))
		svc := liveness.NewService(st.Driver(), c)
		storetest.MustUpsert(t, st, storetest.Liveness("critic-old", "critic", -time.Hour)) // stopped long ago
		storetest.MustUpsert(t, st, storetest.Liveness("critic-new", "critic", 30*time.Second))
		storetest.MustUpsert(t, st, storetest.Liveness("pipeline-dead", "pipeline", -time.Hour))
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
		var unknown *liveness.UnknownKindError
		if _, err := svc.RequestStop(ctx, "critics"); !errors.As(err, &unknown) || !errors.Is(err, cks.ErrInvalid) {
			t.Errorf("unknown kind: %v", err)
		}
	})
}

// TestExited: an instance that exited reads stopped whatever its heartbeat
// says, with its exit time, and is not asked to stop; a row an older cks
// wrote at exit (its heartbeat backdated to the epoch) reads exited at its
// start, with no heartbeat from 1970 in any view; an exit before the start
// is refused, naming exited_at. Both backends.
func TestExited(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open storetest.Opener) {
		st := open(t)
		c := clock.NewFake(storetest.T0.Add(time.Second))
		svc := liveness.NewService(st.Driver(), c)
		ctx := context.Background()
		gone := storetest.Liveness("critic-gone", "critic", 0)
		gone.ExitedAt = storetest.T0
		storetest.MustUpsert(t, st, gone)
		old := storetest.Liveness("pipeline-old", "pipeline", -time.Hour)
		old.LastHeartbeatAt = time.Unix(0, 0).UTC()
		storetest.MustUpsert(t, st, old)

		for _, tc := range []struct {
			kind              string
			exited, heartbeat time.Time
		}{
			{"critic", storetest.T0, storetest.T0},
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
		bad := storetest.Liveness("critic-bad", "critic", 0)
		bad.ExitedAt = storetest.T0.Add(-time.Second)
		var fe *cks.FieldError
		if err := st.Liveness.UpsertAgentLiveness(ctx, bad); !errors.As(err, &fe) || fe.Field != "exited_at" {
			t.Errorf("an exit before the start: %v, want a FieldError naming exited_at", err)
		}
	})
}
