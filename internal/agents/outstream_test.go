package agents_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/runtime/worker"
	"github.com/cks-dev/cks/internal/waitfor"
)

// TestExecStreamsOutput (both backends): an exec agent's command that
// prints and then waits has its stdout and stderr in the attempt's live
// output while it still runs — the command doing nothing for it — and the
// rest, once it goes on, before its attempt completes.
func TestExecStreamsOutput(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		gate := filepath.Join(t.TempDir(), "gate")
		script := `echo started; echo careful >&2; while [ ! -e '` + gate + `' ]; do sleep 0.01; done; echo finished`
		ex := worker.New(st.Tasks, worker.Options{Changes: st.Changes, Heartbeat: time.Hour})
		c := claim(t, st, "stream", `{}`)
		done := make(chan worker.Report, 1)
		go func() {
			r, err := ex.Run(context.Background(), c, agents.Exec(agents.ExecConfig{Command: []string{"sh", "-c", script},
				OutputFlush: 10 * time.Millisecond}))
			if err != nil {
				t.Error(err)
			}
			done <- r
		}()
		read := func() (string, cks.OutputPage) {
			p, err := st.Tasks.Output(context.Background(), c.ID, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, ch := range p.Chunks {
				b.WriteString(ch.Stream + ":" + ch.Text)
			}
			return b.String(), p
		}
		waitfor.Until(t, "the command's first lines in the live output", func() bool {
			got, _ := read()
			return strings.Contains(got, "stdout:started\n") && strings.Contains(got, "stderr:careful\n")
		})
		if got, p := read(); !p.Live || strings.Contains(got, "finished") {
			t.Fatalf("while the command waits: live %v, output %q", p.Live, got)
		}
		select {
		case r := <-done:
			t.Fatalf("the attempt ended before the gate opened: %+v", r)
		default:
		}
		if err := os.WriteFile(gate, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		var r worker.Report
		select {
		case r = <-done:
		case <-time.After(waitfor.Limit):
			t.Fatal("the command did not finish")
		}
		got, p := read()
		if r.Outcome != worker.Completed || p.State != cks.TaskCompleted || !strings.HasSuffix(got, "stdout:finished\n") {
			t.Fatalf("after the command: %+v, output %q (%s)", r.Outcome, got, p.State)
		}
	})
}
