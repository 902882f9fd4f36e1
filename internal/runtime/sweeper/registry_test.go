package sweeper

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
)

func TestStartIfAllowed(t *testing.T) {
	storeDown := errors.New("store down")
	cases := []struct {
		name        string
		enabled     bool
		noStore     bool  // pass a nil Overrides
		row         *bool // the stored override
		readErr     error
		wantStarted bool
		wantErr     error
		wantReads   int64
	}{
		{name: "config disabled, override true", enabled: false, row: ptr(true), wantStarted: false, wantReads: 0},
		{name: "config disabled, no override store", enabled: false, noStore: true, wantStarted: false},
		{name: "no override store", enabled: true, noStore: true, wantStarted: true},
		{name: "no row", enabled: true, row: nil, wantStarted: true, wantReads: 1},
		{name: "override true", enabled: true, row: ptr(true), wantStarted: true, wantReads: 1},
		{name: "override false", enabled: true, row: ptr(false), wantStarted: false, wantReads: 1},
		{name: "override read fails", enabled: true, readErr: storeDown, wantStarted: false, wantErr: storeDown, wantReads: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, p := newTestRunner(t, noop("graph_health"), Options{Interval: time.Hour, ConfigEnabled: c.enabled})
			var reads int64
			var o Overrides
			if !c.noStore {
				o = overridesFunc(func(_ context.Context, id string) (*bool, error) {
					reads++
					if id != "graph_health" {
						t.Errorf("override read for %q", id)
					}
					return c.row, c.readErr
				})
			}
			started, err := startIfAllowed(context.Background(), r, o)
			if started != c.wantStarted || !errors.Is(err, c.wantErr) || (c.wantErr == nil) != (err == nil) {
				t.Fatalf("StartIfAllowed = %v, %v; want %v, %v", started, err, c.wantStarted, c.wantErr)
			}
			if reads != c.wantReads {
				t.Errorf("override reads = %d, want %d", reads, c.wantReads)
			}
			st := r.Status()
			if st.Running != c.wantStarted {
				t.Errorf("running = %v, want %v", st.Running, c.wantStarted)
			}
			if c.wantReads == 1 && c.readErr == nil && !equalPtr(st.DesiredRunning, c.row) {
				t.Errorf("desired_running = %v, want %v", st.DesiredRunning, c.row)
			}
			if c.wantStarted {
				p.waitFor(t, r, "the first pass", func(s cks.SweeperStatus) bool { return s.RunCount == 1 })
			} else if p.entered.Load() != 0 {
				t.Error("a loop was started")
			}
		})
	}
}

func equalPtr[T comparable](a, b *T) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func TestRegistry(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	g := newRegistry()
	if _, err := g.Get("lease_reaper"); err == nil || !strings.Contains(err.Error(), "known sweepers: none") {
		t.Fatalf("Get on an empty registry = %v", err)
	}
	for _, s := range []struct {
		id      string
		enabled bool
	}{{"lease_reaper", true}, {"dependency_release", true}, {"stale_stop_report", true}, {"contradiction", false}} {
		if _, err := g.Register(noop(s.id), Options{Interval: time.Hour, ConfigEnabled: s.enabled, Logger: quiet}); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		if err := g.StopAll(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	wantIDs := []string{"lease_reaper", "dependency_release", "stale_stop_report", "contradiction"}
	if got := g.ids(); !slices.Equal(got, wantIDs) {
		t.Fatalf("IDs = %v, want registration order %v", got, wantIDs)
	}

	if _, err := g.Register(noop("dependency_release"), Options{Interval: time.Hour}); !errors.Is(err, ErrDuplicateSweeper) {
		t.Fatalf("duplicate Register = %v, want ErrDuplicateSweeper", err)
	}
	if _, err := g.Register(noop("Bad-ID"), Options{Interval: time.Hour}); !errors.Is(err, ErrInvalidID) {
		t.Fatalf("Register with a bad id = %v, want ErrInvalidID", err)
	}

	r, err := g.Get("stale_stop_report")
	if err != nil || r.id != "stale_stop_report" {
		t.Fatalf("Get = %v, %v", r, err)
	}
	_, err = g.Get("graph_health")
	var unknown *UnknownSweeperError
	if !errors.Is(err, ErrUnknownSweeper) || !errors.As(err, &unknown) || unknown.ID != "graph_health" {
		t.Fatalf("Get(unknown) = %v, want an *UnknownSweeperError matching ErrUnknownSweeper", err)
	}
	want := `unknown sweeper "graph_health"; known sweepers: lease_reaper, dependency_release, stale_stop_report, contradiction`
	if err.Error() != want {
		t.Errorf("error = %q\nwant    %q", err, want)
	}

	o := overridesFunc(func(_ context.Context, id string) (*bool, error) {
		switch id {
		case "dependency_release":
			return ptr(false), nil
		case "contradiction":
			return ptr(true), nil // never enables a config-disabled sweeper
		}
		return nil, nil
	})
	if err := g.StartAll(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	running := func() []bool {
		var out []bool
		for i, st := range g.List() {
			if st.AgentID != wantIDs[i] || st.Kind != Kind {
				t.Fatalf("List()[%d] = %+v, want %s in registration order", i, st, wantIDs[i])
			}
			out = append(out, st.Running)
		}
		return out
	}
	if got, want := running(), []bool{true, false, true, false}; !slices.Equal(got, want) {
		t.Fatalf("running after StartAll = %v, want %v", got, want)
	}
	if err := g.StopAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := running(), []bool{false, false, false, false}; !slices.Equal(got, want) {
		t.Fatalf("running after StopAll = %v, want %v", got, want)
	}
}

func TestStartAllReportsFailuresAndStartsTheRest(t *testing.T) {
	g := &Registry{}
	quiet := slog.New(slog.DiscardHandler)
	for _, id := range []string{"a", "b", "c"} {
		if _, err := g.Register(noop(id), Options{Interval: time.Hour, ConfigEnabled: true, Logger: quiet}); err != nil {
			t.Fatal(err)
		}
	}
	defer g.StopAll(context.Background())
	storeDown := errors.New("store down")
	o := overridesFunc(func(_ context.Context, id string) (*bool, error) {
		if id == "b" {
			return nil, storeDown
		}
		return nil, nil
	})
	err := g.StartAll(context.Background(), o)
	if !errors.Is(err, storeDown) || !strings.Contains(err.Error(), "sweeper b") {
		t.Fatalf("StartAll = %v, want the read failure of b", err)
	}
	var got []bool
	for _, st := range g.List() {
		got = append(got, st.Running)
	}
	if want := []bool{true, false, true}; !slices.Equal(got, want) {
		t.Fatalf("running = %v, want %v", got, want)
	}
}

// TestFollow: what a node does when another changed an override. A stopped,
// config-enabled runner whose override now says start is started (its first
// pass runs); one with no row, a false override or a failed read is left
// stopped (the failure returned), a config-disabled one is never read; a
// running runner re-reads its override at once and stops on a false one.
func TestFollow(t *testing.T) {
	storeDown := errors.New("store down")
	cases := []struct {
		name        string
		enabled     bool
		running     bool  // started before the override changes
		row         *bool // the override after the change
		readErr     error
		wantRunning bool
		wantErr     error
		wantReads   int64 // reads by Follow and the poked loop
	}{
		{name: "stopped, override true", enabled: true, row: ptr(true), wantRunning: true, wantReads: 1},
		{name: "stopped, no row", enabled: true, row: nil, wantRunning: false, wantReads: 1},
		{name: "stopped, override false", enabled: true, row: ptr(false), wantRunning: false, wantReads: 1},
		{name: "stopped, read fails", enabled: true, readErr: storeDown, wantRunning: false, wantErr: storeDown, wantReads: 1},
		{name: "config disabled, override true", enabled: false, row: ptr(true), wantRunning: false, wantReads: 0},
		{name: "running, override false", enabled: true, running: true, row: ptr(false), wantRunning: false, wantReads: 1},
		{name: "running, override true", enabled: true, running: true, row: ptr(true), wantRunning: true, wantReads: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := &atomicOverride{}
			var reads atomic.Int64
			var fail atomic.Bool
			over := overridesFunc(func(ctx context.Context, id string) (*bool, error) {
				reads.Add(1)
				if fail.Load() {
					return nil, c.readErr
				}
				return o.GetSweeperDesiredRunning(ctx, id)
			})
			r, p := newTestRunner(t, noop("graph_health"), Options{Interval: time.Hour, ConfigEnabled: c.enabled, Overrides: over})
			g := &Registry{runners: []*Runner{r}, byID: map[string]*Runner{r.id: r}}
			if c.running {
				mustStart(t, r)
				p.waitFor(t, r, "the first pass", func(s cks.SweeperStatus) bool { return s.RunCount == 1 })
			}
			reads.Store(0)
			o.set(c.row)
			fail.Store(c.readErr != nil)
			err := g.Follow(waitCtx(t), over)
			if !errors.Is(err, c.wantErr) || (c.wantErr == nil) != (err == nil) {
				t.Fatalf("Follow = %v, want %v", err, c.wantErr)
			}
			if c.wantErr != nil && !strings.Contains(err.Error(), "sweeper graph_health") {
				t.Errorf("Follow's error %q does not name the sweeper", err)
			}
			st := p.waitFor(t, r, fmt.Sprintf("running=%v", c.wantRunning), func(s cks.SweeperStatus) bool {
				return s.Running == c.wantRunning && reads.Load() >= c.wantReads
			})
			if n := reads.Load(); n != c.wantReads {
				t.Errorf("override reads = %d, want %d", n, c.wantReads)
			}
			switch {
			case c.wantRunning && !c.running:
				p.waitFor(t, r, "the first pass of the started loop", func(s cks.SweeperStatus) bool { return s.RunCount == 1 })
			case !c.wantRunning && !c.running && p.entered.Load() != 0:
				t.Errorf("a loop was started: %+v", st)
			}
		})
	}
}
