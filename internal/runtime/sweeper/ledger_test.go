package sweeper_test

import (
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
)

// TestIsStaleStop: a task is a stale stop exactly when it is STOPPED and
// its state changed at least the threshold ago (the boundary counts), as
// StaleStopFilter selects it.
func TestIsStaleStop(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	const day = 24 * time.Hour
	for _, tc := range []struct {
		name    string
		state   cks.TaskState
		changed time.Time
		want    bool
	}{
		{"stopped longer", cks.TaskStopped, now.Add(-day - time.Second), true},
		{"stopped exactly the threshold", cks.TaskStopped, now.Add(-day), true},
		{"stopped a moment less", cks.TaskStopped, now.Add(-day + time.Nanosecond), false},
		{"stopped just now", cks.TaskStopped, now, false},
		{"no state change recorded", cks.TaskStopped, time.Time{}, false},
		{"open for long", cks.TaskOpen, now.Add(-2 * day), false},
	} {
		got := sweeper.IsStaleStop(cks.Task{State: tc.state, StateChangedAt: tc.changed}, now, day)
		if got != tc.want {
			t.Errorf("%s: IsStaleStop = %v, want %v", tc.name, got, tc.want)
		}
	}
	f := sweeper.StaleStopFilter(now, day)
	if len(f.States) != 1 || f.States[0] != cks.TaskStopped || !f.StateChangedBefore.Equal(now.Add(-day)) {
		t.Errorf("StaleStopFilter = %+v", f)
	}
}
