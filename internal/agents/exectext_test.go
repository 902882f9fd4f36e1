package agents_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/runtime/worker"
)

// TestExecOutputIsStoredAsText: a command's output is recorded as text the
// store takes on both backends, every byte that is not (a NUL, invalid
// UTF-8, a UTF-8 sequence the output cap cut in two) replaced by U+FFFD, so
// a command printing binary still completes (or fails with its stderr)
// instead of having its result refused.
func TestExecOutputIsStoredAsText(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		ex := worker.New(st.Tasks, worker.Options{Changes: st.Changes, Heartbeat: time.Hour})
		run := func(typ string, cfg agents.ExecConfig) worker.Report {
			t.Helper()
			r, err := ex.Run(context.Background(), claim(t, st, typ, `{}`), agents.Exec(cfg))
			if err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			return r
		}
		r := run("binary", agents.ExecConfig{Command: []string{"sh", "-c", `printf 'a\000b\377c'`}})
		if r.Outcome != worker.Completed || r.Task.Result != "a\uFFFDb\uFFFDc" {
			t.Fatalf("binary stdout: %+v, result %q", r.Outcome, r.Task.Result)
		}
		if ev := taskState(t, st, r.Task.ID).CurrentEvidence(); len(ev) != 1 || ev[0].Body != r.Task.Result {
			t.Fatalf("binary stdout evidence %+v", ev)
		}
		r = run("cut", agents.ExecConfig{MaxOutput: 3, Command: []string{"sh", "-c", "printf 'ééé'"}})
		if r.Outcome != worker.Completed || r.Task.Result != "é\uFFFD\n[3 more bytes cut]" {
			t.Fatalf("cut stdout: %+v, result %q", r.Outcome, r.Task.Result)
		}
		r = run("stderr", agents.ExecConfig{Command: []string{"sh", "-c", `printf '\377\000 boom' >&2; exit 4`}})
		if r.Outcome != worker.Failed || r.Task.State != cks.TaskOpen ||
			!strings.Contains(r.Task.LastError, "\uFFFD\uFFFD boom") || !strings.Contains(r.Task.LastError, "exit status 4") {
			t.Fatalf("binary stderr: %+v, last error %q", r.Outcome, r.Task.LastError)
		}
	})
}
