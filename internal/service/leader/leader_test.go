package leader_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/leader"
	"github.com/cks-dev/cks/internal/waitfor"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ctxOf(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// started starts an elector on its own handle of the database and stops it
// when the test ends.
func started(t testing.TB, open backendtest.Opener, id string, cfg leader.Config) (*leader.Elector, *backend.Backend) {
	t.Helper()
	st := open(t)
	cfg.ID = id
	if cfg.Changes == nil {
		cfg.Changes = st.Changes
	}
	e := leader.New(st.Driver(), cfg)
	if err := e.Start(ctxOf(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Stop(context.Background()) })
	return e, st
}

// hour makes an elector whose lease and interval are far longer than a
// test: whatever changes hands here does so by a resignation's
// notification, or by a lease the test made lapse.
var hour = leader.Config{TTL: time.Hour, Interval: time.Hour}

// TestOneLeader: of three hubs on one database exactly one leads, the first
// started (Start's first election runs before it returns), and every hub
// reads the same leader.
func TestOneLeader(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		a, _ := started(t, open, "hub-a", hour)
		b, _ := started(t, open, "hub-b", hour)
		c, _ := started(t, open, "hub-c", hour)
		if !a.IsLeader() || b.IsLeader() || c.IsLeader() {
			t.Fatalf("leaders: a %v b %v c %v; want a alone", a.IsLeader(), b.IsLeader(), c.IsLeader())
		}
		for _, e := range []*leader.Elector{a, b, c} {
			l, ok, err := e.Current(ctxOf(t))
			if err != nil || !ok || l.ID != "hub-a" || l.Name != "maintenance" {
				t.Fatalf("%s reads the leader as %+v, %v, %v; want hub-a", e.ID(), l, ok, err)
			}
		}
	})
}

// TestResignHandsOver: a leader that stops resigns and notifies, and
// another hub takes over at once — not after its hour-long interval.
func TestResignHandsOver(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		var changes []bool
		a, _ := started(t, open, "hub-a", hour)
		cfg := hour
		gained := make(chan struct{})
		cfg.OnChange = func(held bool) {
			changes = append(changes, held)
			if held {
				close(gained)
			}
		}
		b, _ := started(t, open, "hub-b", cfg)
		if err := a.Stop(ctxOf(t)); err != nil {
			t.Fatal(err)
		}
		if a.IsLeader() {
			t.Fatal("a stopped elector still says it leads")
		}
		select {
		case <-gained:
		case <-ctxOf(t).Done():
			t.Fatal("hub-b did not take over after hub-a resigned")
		}
		if !b.IsLeader() {
			t.Fatal("hub-b was told it gained the leadership but does not lead")
		}
		l, ok, err := b.Current(ctxOf(t))
		if err != nil || !ok || l.ID != "hub-b" {
			t.Fatalf("leader after the hand-over = %+v, %v, %v; want hub-b", l, ok, err)
		}
		if err := b.Stop(ctxOf(t)); err != nil {
			t.Fatal(err)
		}
		if len(changes) != 2 || !changes[0] || changes[1] {
			t.Fatalf("hub-b's OnChange calls = %v, want [true false]", changes)
		}
		if _, ok, err := b.Current(ctxOf(t)); err != nil || ok {
			t.Fatalf("after every hub stopped: ok %v, %v; want no leader", ok, err)
		}
	})
}

// TestKilledLeaderReplaced: a leader that stops renewing without resigning
// (killed) holds the leadership until its lease runs out, and not longer.
func TestKilledLeaderReplaced(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		// The killed hub's last renewal, with a lease that is already over.
		if _, err := st.Driver().Executor().LeaderElect(ctxOf(t), driver.LeaderElectParams{Name: "maintenance",
			LeaderID: "hub-killed", TTL: time.Microsecond, Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
		b, _ := started(t, open, "hub-b", leader.Config{TTL: time.Hour, Interval: 20 * time.Millisecond})
		waitfor.Until(t, "takeover of the lapsed leadership", b.IsLeader)

		// While a live leader renews, a second hub never takes over.
		c, _ := started(t, open, "hub-c", leader.Config{TTL: time.Hour, Interval: 20 * time.Millisecond})
		for range 5 {
			l, ok, err := c.Current(ctxOf(t))
			if err != nil || !ok || l.ID != "hub-b" || c.IsLeader() {
				t.Fatalf("with hub-b leading: %+v, %v, %v, c leads %v", l, ok, err, c.IsLeader())
			}
		}
	})
}

// TestDeadHubOnThisHostReplacedAtOnce: a hub restarted on the host of a
// killed leader (the one hub of a SQLite file) takes the leadership at its
// first election, not when the dead one's hour-long lease runs out; a
// leader whose process runs keeps it.
func TestDeadHubOnThisHostReplacedAtOnce(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip(err)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip(err)
	}
	dead := fmt.Sprintf("%s/%d/deadbeef", host, cmd.Process.Pid)
	alive := fmt.Sprintf("%s/%d/cafecafe", host, os.Getppid())
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		for _, tc := range []struct {
			holder string
			want   bool
		}{{alive, false}, {dead, true}} {
			st.Driver().Executor().LeaderResign(ctxOf(t), "maintenance", alive) //nolint:errcheck // a fresh start
			if _, err := st.Driver().Executor().LeaderElect(ctxOf(t), driver.LeaderElectParams{Name: "maintenance",
				LeaderID: tc.holder, TTL: time.Hour, Now: time.Now()}); err != nil {
				t.Fatal(err)
			}
			e, _ := started(t, open, "hub-new-"+fmt.Sprint(tc.want), hour)
			if e.IsLeader() != tc.want {
				t.Fatalf("holder %s: the new hub leads %v, want %v", tc.holder, e.IsLeader(), tc.want)
			}
			e.Stop(ctxOf(t))
		}
	})
}
