package peers

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
)

// countingConn counts an agent's lease renewals and mark_running calls.
type countingConn struct {
	agentConn
	touches, marks *atomic.Int64
}

func (c countingConn) Heartbeat(ctx context.Context, id int64, leaseToken string) (cks.TouchResult, error) {
	c.touches.Add(1)
	return c.agentConn.Heartbeat(ctx, id, leaseToken)
}

func (c countingConn) MarkRunning(ctx context.Context, id int64, leaseToken string) (cks.Task, error) {
	c.marks.Add(1)
	return c.agentConn.MarkRunning(ctx, id, leaseToken)
}

// TestRemoteThroughput works tasks through a hub on SQLite, over HTTP and
// over MCP, with two lease renewals per task: every task is completed (the
// harness checks each once), and each renewal went through the agent's
// connection. The claims go straight into RUNNING, so no agent calls
// mark_running, and the hub serves exactly the claim, the renewals and the
// completion of each task, and each agent's last claim (which finds none).
func TestRemoteThroughput(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a hub over real HTTP")
	}
	const jobs, touches = 20, 2
	for _, system := range []string{SystemCksHTTP, SystemCksMCP} {
		t.Run(system, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			st, err := backend.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "cks.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			ra, err := connectAgents(ctx, st, system, 3)
			if err != nil {
				t.Fatal(err)
			}
			var n, marks atomic.Int64
			for i, c := range ra.conns {
				ra.conns[i] = countingConn{agentConn: c, touches: &n, marks: &marks}
			}
			before := ra.hub.requests.Load()
			_, work, err := remoteThroughput(ctx, st, ra, jobs, 1, agentSettings{lease: time.Minute, touches: touches}, func(string, int, int) {})
			requests := ra.hub.requests.Load() - before
			if cerr := ra.close(ctx); cerr != nil {
				t.Error(cerr)
			}
			if err != nil {
				t.Fatal(err)
			}
			if work <= 0 {
				t.Errorf("work took %v", work)
			}
			if got := n.Load(); got != jobs*touches {
				t.Errorf("%d lease renewals, want %d (%d per task)", got, jobs*touches, touches)
			}
			if got := marks.Load(); got != 0 {
				t.Errorf("%d mark_running calls, want none (the claims run)", got)
			}
			if want := int64(jobs*(2+touches) + len(ra.conns)); requests != want {
				t.Errorf("the hub served %d requests, want %d (claim, %d renewals, completion per task, a last claim per agent)",
					requests, want, touches)
			}
			if err := expectCompleted(ctx, st, jobs); err != nil {
				t.Error(err)
			}
		})
	}
}
