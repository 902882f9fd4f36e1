package sweeper_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
)

// TestSweeperPasses: the passes a runner records (cks_sweeper_passes), on
// both backends.
func TestSweeperPasses(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{
		"PassesSurviveAndAreShared": testPassesSurviveAndAreShared,
		"PassesCappedPerSweeper":    testPassesCappedPerSweeper,
		"RetentionPrunesOldPasses":  testRetentionPrunesOldPasses,
		"PassesBadInput":            testPassesBadInput,
	})
}

// passSweeper counts its calls, fails its second pass, and reports its
// call number as details.
type passSweeper struct{ n atomic.Int64 }

func (*passSweeper) ID() string { return "graph_health" }

func (s *passSweeper) SweepOnce(context.Context) (int, error) {
	n := s.n.Add(1)
	if n == 2 {
		return 0, errors.New("store down")
	}
	return int(n) * 10, nil
}

func (s *passSweeper) Details() any { return map[string]int64{"call": s.n.Load()} }

// passes reads list_agents' recent passes of graph_health through b, as
// "hub|count|error|details" newest first.
func passes(t *testing.T, b *backend.Backend) []string {
	t.Helper()
	sts, err := b.Sweepers.List(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, st := range sts {
		if st.AgentID != "graph_health" {
			continue
		}
		for _, p := range st.RecentPasses {
			out = append(out, fmt.Sprintf("%s|%d|%s|%s", p.Hub, p.Count, p.Error, p.Details))
		}
	}
	return out
}

// testPassesSurviveAndAreShared: a runner's passes are recorded as they
// end, newest first in list_agents; another backend on the same database
// (a restarted hub, or a second hub standing by) answers the same passes,
// naming the hub that ran them.
func testPassesSurviveAndAreShared(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	done := make(chan struct{}, 1)
	r, err := s.Sweepers.Registry().Register(&passSweeper{}, sweeper.Options{Interval: time.Hour, ConfigEnabled: true,
		Clock: clk, Logger: slog.New(slog.DiscardHandler), Passes: s.Sweepers, Hub: "hub-a",
		OnRun: func(string, time.Duration, int, error) { done <- struct{}{} }})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if i > 0 {
			r.RunNow()
		}
		select {
		case <-done:
		case <-ctx(t).Done():
			t.Fatalf("pass %d never ended", i+1)
		}
	}
	if err := r.Stop(ctx(t)); err != nil {
		t.Fatal(err)
	}
	want := []string{`hub-a|30||{"call":3}`, `hub-a|0|store down|{"call":2}`, `hub-a|10||{"call":1}`}
	if got := passes(t, s); !slices.Equal(got, want) {
		t.Fatalf("recent passes = %q, want %q", got, want)
	}

	other := open(t) // a new hub on the same database: nothing run there
	if _, err := other.Sweepers.Registry().Register(&passSweeper{}, sweeper.Options{Interval: time.Hour, ConfigEnabled: true}); err != nil {
		t.Fatal(err)
	}
	if got := passes(t, other); !slices.Equal(got, want) {
		t.Fatalf("recent passes on another backend = %q, want the first hub's %q", got, want)
	}
	st, err := other.Sweepers.Status(ctx(t), "graph_health")
	if err != nil || len(st.RecentPasses) != 3 || st.RunCount != 0 {
		t.Fatalf("agent_status on another backend: %+v, %v; want the 3 passes and no run of its own", st, err)
	}
}

// testPassesCappedPerSweeper: recording a pass trims the sweeper's passes
// beyond its newest PassesKept, and no other sweeper's.
func testPassesCappedPerSweeper(t *testing.T, open backendtest.Opener) {
	s := open(t)
	rec := func(id string, i int) {
		t.Helper()
		p := cks.SweeperPass{At: backendtest.T0.Add(time.Duration(i) * time.Second), DurationMS: 1, Count: i}
		if err := s.Sweepers.RecordPass(ctx(t), id, p); err != nil {
			t.Fatal(err)
		}
	}
	rec("retention", 0)
	for i := range sweeper.PassesKept + 2 {
		rec("lease_reaper", i)
	}
	got, err := s.Sweepers.RecentPasses(ctx(t), "lease_reaper", sweeper.PassesKept+10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != sweeper.PassesKept || got[0].Count != sweeper.PassesKept+1 || got[len(got)-1].Count != 2 {
		t.Fatalf("%d passes kept, newest %d, oldest %d; want %d, %d to 2", len(got), got[0].Count, got[len(got)-1].Count,
			sweeper.PassesKept, sweeper.PassesKept+1)
	}
	if other, err := s.Sweepers.RecentPasses(ctx(t), "retention", 10); err != nil || len(other) != 1 {
		t.Fatalf("retention's passes = %v, %v; want its one pass untouched", other, err)
	}
}

// testRetentionPrunesOldPasses: the retention sweeper deletes the passes
// older than CKS_RETENTION's age and keeps the younger; age 0 keeps them.
func testRetentionPrunesOldPasses(t *testing.T, open backendtest.Opener) {
	s := open(t)
	day := 24 * time.Hour
	for _, at := range []time.Duration{0, 22 * day, 23 * day, 29 * day} {
		p := cks.SweeperPass{At: backendtest.T0.Add(at), DurationMS: 2, Count: int(at / day)}
		if err := s.Sweepers.RecordPass(ctx(t), "lease_reaper", p); err != nil {
			t.Fatal(err)
		}
	}
	c := clock.NewFake(backendtest.T0.Add(30 * day))
	left := func() string {
		t.Helper()
		ps, err := s.Sweepers.RecentPasses(ctx(t), "lease_reaper", 10)
		if err != nil {
			t.Fatal(err)
		}
		var days []string
		for _, p := range ps {
			days = append(days, fmt.Sprint(p.Count))
		}
		return strings.Join(days, " ")
	}
	off := &sweeper.Retention{Passes: s.Sweepers, Clock: c}
	if n, err := off.SweepOnce(ctx(t)); err != nil || n != 0 || left() != "29 23 22 0" {
		t.Fatalf("age 0: pass = %d, %v, left %q; want everything kept", n, err, left())
	}
	r := &sweeper.Retention{Passes: s.Sweepers, Clock: c, Age: 7 * day}
	n, err := r.SweepOnce(ctx(t))
	if err != nil || n != 2 {
		t.Fatalf("pass = %d, %v; want the 2 passes older than 7 days", n, err)
	}
	if got := left(); got != "29 23" {
		t.Fatalf("left the passes of days %q, want 29 23", got)
	}
	if rep, ok := r.Details().(sweeper.RetentionReport); !ok || rep.SweeperPasses != 2 {
		t.Fatalf("details %+v, want sweeper_passes 2", r.Details())
	}
}

// testPassesBadInput: a pass of an invalid sweeper id is refused naming
// agent_id, and nothing is written.
func testPassesBadInput(t *testing.T, open backendtest.Opener) {
	s := open(t)
	for _, id := range []string{"", "  "} {
		if err := s.Sweepers.RecordPass(ctx(t), id, cks.SweeperPass{At: backendtest.T0}); !cks.IsFieldError(err, "agent_id") {
			t.Errorf("RecordPass(%q) = %v, want a FieldError naming agent_id", id, err)
		}
		if _, err := s.Sweepers.RecentPasses(ctx(t), id, 1); !cks.IsFieldError(err, "agent_id") {
			t.Errorf("RecentPasses(%q) = %v, want a FieldError naming agent_id", id, err)
		}
	}
}
