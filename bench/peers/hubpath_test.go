package peers

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cks-dev/cks/backend"
)

// countingConn counts an agent's lease renewals.
type countingConn struct {
	agentConn
	touches *atomic.Int64
}

func (c countingConn) Touch(ctx context.Context, id int64, leaseToken string) (bool, error) {
	c.touches.Add(1)
	return c.agentConn.Touch(ctx, id, leaseToken)
}

// TestRemoteThroughput works tasks through a hub on SQLite, over HTTP and
// over MCP, with two lease renewals per task: every task is completed (the
// harness checks each once), and each renewal went through the agent's
// connection.
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
			var n atomic.Int64
			for i, c := range ra.conns {
				ra.conns[i] = countingConn{agentConn: c, touches: &n}
			}
			_, work, err := remoteThroughput(ctx, st, ra, jobs, 1, agentSettings{lease: time.Minute, touches: touches}, func(string, int, int) {})
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
			if err := expectCompleted(ctx, st, jobs); err != nil {
				t.Error(err)
			}
		})
	}
}
