package agents_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestRecordExit: recording a gone agent process releases the lease it
// claimed under its executor name (the task OPEN again, its token refused)
// and makes its row read exited; another instance of the kind keeps its
// lease. Both backends.
func TestRecordExit(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		ctx := context.Background()
		gone, alive := backendtest.Liveness("gone-1", "exec", 0), backendtest.Liveness("alive-1", "exec", 0)
		gone.LastHeartbeatAt, alive.LastHeartbeatAt = time.Now(), time.Now()
		for _, r := range []cks.AgentLiveness{gone, alive} {
			backendtest.MustUpsert(t, st, r)
		}
		claimed := map[string]cks.ClaimedTask{}
		for _, r := range []cks.AgentLiveness{gone, alive} {
			if _, _, err := st.Tasks.Enqueue(ctx, cks.NewTask{Type: "build"}); err != nil {
				t.Fatal(err)
			}
			ts, err := st.Tasks.Claim(ctx, ledger.ClaimParams{Worker: agents.ExecutorName(r.ProcessKind, r.InstanceID),
				Types: []string{"build"}, N: 1, Lease: time.Hour, Running: true})
			if err != nil || len(ts) != 1 {
				t.Fatalf("claim: %v %v", ts, err)
			}
			claimed[r.InstanceID] = ts[0]
		}
		released, err := agents.ExitRecorder{Tasks: st.Tasks, Liveness: st.Liveness}.RecordExit(ctx, gone, "cks dev")
		if err != nil || len(released) != 1 || released[0].ID != claimed["gone-1"].ID || released[0].State != cks.TaskOpen {
			t.Fatalf("RecordExit = %+v, %v; want task %d released OPEN", released, err, claimed["gone-1"].ID)
		}
		if _, err := st.Tasks.Complete(ctx, released[0].ID, claimed["gone-1"].LeaseToken, false, "zombie"); !errors.Is(err, cks.ErrLeaseLost) {
			t.Fatalf("the gone instance completes its task: %v, want ErrLeaseLost", err)
		}
		if task, err := st.Tasks.GetTask(ctx, claimed["alive-1"].ID); err != nil || task.State != cks.TaskRunning {
			t.Fatalf("the alive instance's task: %v %v, want RUNNING", task.State, err)
		}
		rows, err := st.Liveness.ListProcesses(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range rows {
			if exited := !p.ExitedAt.IsZero(); exited != (p.InstanceID == "gone-1") {
				t.Errorf("%s: exited %s (%s)", p.InstanceID, p.ExitedAt, p.Status)
			}
		}
	})
}

// TestParseExecutorName: what ExecutorName makes parses back; other
// executor names do not.
func TestParseExecutorName(t *testing.T) {
	kind, id, ok := agents.ParseExecutorName(agents.ExecutorName("critic", "0b6c-41"))
	if !ok || kind != "critic" || id != "0b6c-41" {
		t.Errorf("round trip: %q %q %v", kind, id, ok)
	}
	for _, name := range []string{"worker-7", "", "/x", "critic/", "a/b/c"} {
		if _, _, ok := agents.ParseExecutorName(name); ok {
			t.Errorf("%q parsed as an agent process's executor", name)
		}
	}
}
