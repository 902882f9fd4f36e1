package studio

import (
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
)

// TestExitReadBeforeItsTimeIsRecent: a listing reads its time before its
// rows, so an exit written in between reads as a moment in the future; its
// card still stays among its kind's live ones, stopped "just now", rather
// than going to the collapsed history (the CI flake of
// TestBrowserPanelStopsAnAgent at load 16).
func TestExitReadBeforeItsTimeIsRecent(t *testing.T) {
	s := &server{ops: &ops.Services{}}
	at := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	p := cks.Process{AgentLiveness: cks.AgentLiveness{InstanceID: "i-1", ProcessKind: "critic", Hostname: "h", PID: 1,
		LivenessIntervalS: 30, StartedAt: at.Add(-time.Minute), LastHeartbeatAt: at, ExitedAt: at},
		Status: cks.ProcessStopped, HeartbeatAgeS: -0.002}
	var g procGroup
	g.keepRecent(s.cards([]cks.Process{p}))
	if len(g.Live) != 1 || len(g.History) != 0 {
		t.Fatalf("live %d, history %d: want the card live", len(g.Live), len(g.History))
	}
	if got := g.Live[0].ExitedAge; got != "just now" {
		t.Errorf("exited %q, want just now", got)
	}
}
