package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
)

// blipCommand is the exec agent's command of TestExecOutputSurvivesRestart:
// it counts its runs, says it ran, and exits 0 once the test says so — the
// test takes the database down in between.
const blipCommand = `echo run >> "$T_DIR/runs"
touch "$T_DIR/ran"
while [ ! -e "$T_DIR/go" ]; do sleep 0.02; done
echo "out $CKS_TASK_ID"`

// TestExecOutputSurvivesRestart (issue 38 item 3): Postgres goes down
// between the exit 0 of an exec agent's command and the agent's write of
// its output (the stdout evidence, then the completion) — a real server
// of the test's own, stopped immediately (a crash: every connection
// refused) while the command still runs and started again once the agent
// has met the outage on that write. The write is made again until the
// database answers, within the lease: the command ran exactly once, and the
// task is COMPLETED on its first attempt with that run's output.
func TestExecOutputSurvivesRestart(t *testing.T) {
	pg := startPGCluster(t)
	if pg == nil {
		t.Skip("no PostgreSQL server binaries (/usr/lib/postgresql/*/bin) to run a server of the test's own")
	}
	ctx := context.Background()
	st, err := backend.Open(ctx, pg.url())
	if err != nil {
		t.Fatal(err)
	}
	task, _, err := st.Tasks.Enqueue(ctx, cks.NewTask{Type: "blip", Title: "its output is written across a restart"})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a := startAgent(t, []string{"T_DIR=" + dir, "CKS_EXEC_HEARTBEAT_INTERVAL=5"}, // a 15 s lease
		append([]string{"exec", "--database", pg.url(), "--types", "blip"}, append(fastAgent, "--", "sh", "-c", blipCommand)...)...)
	waitFor(t, "the command to run", func() bool { _, err := os.Stat(filepath.Join(dir, "ran")); return err == nil })
	if err := pg.stop(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil { // the command exits 0, the database down
		t.Fatal(err)
	}
	// The agent meets the outage on the write after the command's exit.
	a.waitLog(t, "writing the attempt failed; retrying")
	if err := pg.start(); err != nil {
		t.Fatal(err)
	}
	st, err = backend.Open(ctx, pg.url())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var got cks.Task
	waitFor(t, fmt.Sprintf("task %d to end", task.ID), func() bool {
		got, err = st.Tasks.GetTask(ctx, task.ID)
		return err == nil && (got.State == cks.TaskCompleted || got.State == cks.TaskFailed)
	})
	runs, _ := os.ReadFile(filepath.Join(dir, "runs"))
	if n := strings.Count(string(runs), "run\n"); n != 1 {
		t.Fatalf("the command ran %d times across the restart, want exactly once (agent log:\n%s)", n, a.stderr.String())
	}
	if got.State != cks.TaskCompleted || got.Attempts != 1 || got.Result != fmt.Sprintf("out %d\n", task.ID) {
		t.Fatalf("task %s, attempt %d, result %q; want COMPLETED on attempt 1 with the run's output", got.State, got.Attempts, got.Result)
	}
	stdout := 0
	for _, e := range got.Current.Evidence {
		if e.Kind == "stdout" && e.Body == got.Result {
			stdout++
		}
	}
	if stdout == 0 {
		t.Fatalf("no stdout evidence of the run: %+v", got.Current.Evidence)
	}
	a.cmd.Process.Signal(syscall.SIGTERM)
	if code := a.wait(t); code != 0 {
		t.Fatalf("agent exit status %d after SIGTERM\n%s", code, a.stderr.String())
	}
}
