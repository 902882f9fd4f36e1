package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestStopTaskSaysFrom: the operator's stop answers the state it moved the
// task from, so no surface reads the task's events to tell it.
func TestStopTaskSaysFrom(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t).Tasks
		ctx := context.Background()
		for _, tc := range []struct {
			name  string
			claim bool
			want  cks.TaskState
		}{{"open", false, cks.TaskOpen}, {"claimed", true, cks.TaskClaimed}} {
			task, _, err := s.Enqueue(ctx, cks.NewTask{Type: "stop-from-" + tc.name})
			if err != nil {
				t.Fatal(err)
			}
			if tc.claim {
				if got, err := s.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{task.Type}, N: 1, Lease: time.Minute}); err != nil || len(got) != 1 {
					t.Fatalf("claim = %v, %v", got, err)
				}
			}
			res, err := s.StopTask(ctx, ledger.StopParams{ID: task.ID, Actor: "op", Reason: "hold", Deadline: time.Second})
			if err != nil || res.From != tc.want || res.Task.State != cks.TaskStopped {
				t.Fatalf("%s: stop = from %q, state %s, %v; want from %s", tc.name, res.From, res.Task.State, err, tc.want)
			}
		}
	})
}
