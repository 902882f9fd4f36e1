package mcpserver_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// TestProgressWhileStopWaits (issue 37, finding 6): a stop_task that waits
// for its executor to confirm the abort (deadline up to 10 minutes) sends
// notifications/progress under the request's progressToken every
// ProgressEvery while it waits — over streamable HTTP and relayed by the
// stdio proxy under the client's own token — and answers abort_confirmed
// once the executor confirms, however long after.
func TestProgressWhileStopWaits(t *testing.T) {
	sh := newSessionHub(t, mcpserver.HTTPOptions{})
	_, admin := sh.principal(t, cks.Grant{Resource: auth.ResourceRoot, Permission: auth.PermAdmin})
	for _, tc := range []struct {
		name    string
		connect func(t *testing.T) (*mcp.ClientSession, *notes)
	}{
		{"streamable HTTP", func(t *testing.T) (*mcp.ClientSession, *notes) {
			n := &notes{}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "sdk", Version: "0"}, &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
					n.add(fmt.Sprintf("progress %v", r.Params.ProgressToken))
				}}).Connect(ctx(t), &mcp.StreamableClientTransport{Endpoint: sh.url + "/mcp", MaxRetries: -1,
				HTTPClient: &http.Client{Transport: bearer{admin}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			return cs, n
		}},
		{"stdio proxy", func(t *testing.T) (*mcp.ClientSession, *notes) { return proxied(t, sh.url, admin) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ := "progress-" + strings.ReplaceAll(tc.name, " ", "-")
			if _, _, err := sh.e.store.Tasks.Enqueue(ctx(t), cks.NewTask{Type: typ, Title: "long"}); err != nil {
				t.Fatal(err)
			}
			claimed, err := sh.e.store.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "w", Types: []string{typ}, N: 1, Lease: time.Hour})
			if err != nil || len(claimed) != 1 {
				t.Fatalf("claim: %v %v", claimed, err)
			}
			cs, got := tc.connect(t)
			params := &mcp.CallToolParams{Name: mcpserver.ToolStopTask,
				Arguments: map[string]any{"task_id": claimed[0].ID, "reason": "hold", "deadline": "10m"}}
			params.SetProgressToken("stop-1")
			type answer struct {
				res *mcp.CallToolResult
				err error
			}
			done := make(chan answer, 1)
			go func() {
				res, err := cs.CallTool(context.Background(), params)
				done <- answer{res, err}
			}()
			deadline := time.Now().Add(20 * time.Second)
			for got.count("progress stop-1") < 3 {
				sh.e.clock.Advance(time.Second) // the progress interval of newSessionHub
				if time.Now().After(deadline) {
					t.Fatalf("progress notifications: %v, want 3 of stop-1", got.got)
				}
				time.Sleep(5 * time.Millisecond) // polling a condition
			}
			if _, err := sh.e.store.Tasks.ConfirmAbort(ctx(t), claimed[0].ID, claimed[0].LeaseToken); err != nil {
				t.Fatal(err)
			}
			a := <-done
			if a.err != nil {
				t.Fatal(a.err)
			}
			var out cks.TaskStopResult
			decode(t, a.res, &out)
			if out.Task.State != cks.TaskStopped || out.Abort == nil || out.Abort.Outcome != cks.AbortConfirmed {
				t.Fatalf("stop: %+v abort %+v, want STOPPED and abort_confirmed", out.Task.State, out.Abort)
			}
		})
	}
}
