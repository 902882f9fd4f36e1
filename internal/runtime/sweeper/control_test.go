package sweeper_test

import (
	"errors"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
)

// TestSweeperControl: the sweepers' desired-running rows, on both backends.
func TestSweeperControl(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{
		"SweeperControlRoundTrip": testSweeperControlRoundTrip,
		"SweeperControlBadInput":  testSweeperControlBadInput,
	})
}

func testSweeperControlRoundTrip(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	other := open(t)
	steps := []struct {
		id      string
		set     *bool // nil: only read
		want    map[string]*bool
		comment string
	}{
		{"", nil, map[string]*bool{"contradiction": nil, "graph_health": nil}, "no rows: the config default applies"},
		{"contradiction", ptr(false), map[string]*bool{"contradiction": ptr(false), "graph_health": nil}, "stop one"},
		{"contradiction", ptr(false), map[string]*bool{"contradiction": ptr(false), "graph_health": nil}, "idempotent"},
		{"graph_health", ptr(true), map[string]*bool{"contradiction": ptr(false), "graph_health": ptr(true)}, "start another"},
		{"contradiction", ptr(true), map[string]*bool{"contradiction": ptr(true), "graph_health": ptr(true)}, "upsert flips it"},
	}
	for _, st := range steps {
		clk.Advance(time.Second)
		if st.set != nil {
			if err := s.Sweepers.SetSweeperDesiredRunning(ctx(t), st.id, *st.set); err != nil {
				t.Fatalf("%s: Set(%s, %v): %v", st.comment, st.id, *st.set, err)
			}
		}
		for id, want := range st.want {
			for name, h := range map[string]*backend.Backend{"writer": s, "other handle": other} {
				got, err := h.Sweepers.GetSweeperDesiredRunning(ctx(t), id)
				if err != nil {
					t.Fatalf("%s: Get(%s) on %s: %v", st.comment, id, name, err)
				}
				if (got == nil) != (want == nil) || (got != nil && *got != *want) {
					t.Fatalf("%s: Get(%s) on %s = %v, want %v", st.comment, id, name, show(got), show(want))
				}
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }

func show(b *bool) string {
	if b == nil {
		return "nil (no row)"
	}
	if *b {
		return "true"
	}
	return "false"
}

func testSweeperControlBadInput(t *testing.T, open backendtest.Opener) {
	s := open(t)
	for _, id := range []string{"", "  "} {
		if err := s.Sweepers.SetSweeperDesiredRunning(ctx(t), id, false); !cks.IsFieldError(err, "agent_id") || !errors.Is(err, cks.ErrInvalid) {
			t.Errorf("Set(%q): err = %v, want a FieldError naming agent_id", id, err)
		}
		if got, err := s.Sweepers.GetSweeperDesiredRunning(ctx(t), id); got != nil || !cks.IsFieldError(err, "agent_id") {
			t.Errorf("Get(%q) = %v, %v; want a FieldError naming agent_id", id, show(got), err)
		}
	}
}

// ctx bounds a test's calls: backendtest.Ctx.
var ctx = backendtest.Ctx
