package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/service/auth"
)

// pyWorker is examples/python-worker/worker.py running with args against
// h under token; done is closed when it has exited, with code set.
type pyWorker struct {
	stderr *syncBuffer
	done   chan struct{}
	code   int
}

// startPyWorker starts the Python worker; without python3 the test is
// skipped, saying so, or fails under CI=true.
func startPyWorker(t testing.TB, h *hubProc, token string, args ...string) *pyWorker {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: no python3 on PATH for examples/python-worker")
		}
		t.Skip("no python3 on PATH: the Python worker example is not run")
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "examples", "python-worker", "worker.py"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmd := exec.CommandContext(ctx, py, append([]string{script}, args...)...)
	// URL and token from the environment, as a deployed worker gets them.
	cmd.Env = append(cleanEnv(), "CKS_URL="+h.url, "CKS_TOKEN="+token)
	w := &pyWorker{stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		defer cancel()
		_ = cmd.Wait() // the exit status is the result
		w.code = cmd.ProcessState.ExitCode()
		close(w.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-w.done
	})
	return w
}

// wait waits for the worker to exit and returns its status.
func (w *pyWorker) wait(t testing.TB) int {
	t.Helper()
	select {
	case <-w.done:
		return w.code
	case <-time.After(90 * time.Second):
		t.Fatalf("the Python worker did not exit:\n%s", w.stderr.String())
		return -1
	}
}

// TestPythonWorker drives examples/python-worker (Python's standard library
// only, the HTTP executor API) against a real hub, on both backends, with a
// token holding only read and append on /tasks: it claims a task straight
// into RUNNING, records a decision with the claimed revision and heartbeats; an
// operator's stop mid-run reaches it through the next heartbeat, and it
// confirms the abort (the waiting stop answers abort_confirmed). The task,
// edited (a new revision) and started again, is claimed by a second run at
// the new revision — and a zombie copy of the first run, completing under
// its saved lease, is refused (lease_lost) and changes nothing. The second
// run completes the task.
func TestPythonWorker(t *testing.T) {
	forBackends(t, func(t *testing.T, db testDB) {
		ctx := context.Background()
		h := startHub(t, "serve", "--database", db.url)
		op := client.New(h.url, h.token)
		token := newToken(t, h, "py-worker",
			cks.Grant{Resource: auth.ResourceTasks, Permission: auth.PermRead},
			cks.Grant{Resource: auth.ResourceTasks, Permission: auth.PermAppend})
		task, _, err := op.CreateTask(ctx, cks.NewTask{Type: "py", Title: "port the parser"})
		if err != nil {
			t.Fatal(err)
		}
		saved := filepath.Join(t.TempDir(), "lease.json")
		first := startPyWorker(t, h, token, "--type", "py", "--lease-s", "30", "--work-s", "60", "--heartbeat-s", "0.1", "--save-lease", saved)
		running := func(what string, revision int) {
			t.Helper()
			waitFor(t, what, func() bool {
				got, err := op.GetTask(ctx, task.ID)
				return err == nil && got.State == cks.TaskRunning && got.Current != nil && len(got.Current.Decisions) == 1 &&
					got.Current.Decisions[0].DerivedFromRevision == revision
			})
		}
		running("the first run's decision at revision 1", 1)
		// The worker claims with running true: started at the claim, not
		// by a mark_running request after it.
		if got, err := op.GetTask(ctx, task.ID); err != nil || !got.StateChangedAt.Equal(got.ClaimedAt) {
			t.Fatalf("first run's task: started %v, claimed %v (%v); want started at the claim", got.StateChangedAt, got.ClaimedAt, err)
		}

		stop, err := op.StopTask(ctx, task.ID, client.StopRequest{Reason: "criteria change", Deadline: 60 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if stop.Abort == nil || stop.Abort.Outcome != cks.AbortConfirmed || stop.Task.State != cks.TaskStopped {
			t.Fatalf("stop: %+v, want STOPPED with the abort confirmed by the worker", stop)
		}
		if code := first.wait(t); code != 3 || !strings.Contains(first.stderr.String(), "abort requested") {
			t.Fatalf("first run: exit %d, want 3 (aborted):\n%s", code, first.stderr.String())
		}

		crit := "parses v2"
		upd, err := op.UpdateTask(ctx, task.ID, client.UpdateRequest{Patch: cks.TaskPatch{AcceptanceCriteria: &crit}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := op.StartTask(ctx, task.ID, "go again"); err != nil {
			t.Fatal(err)
		}
		second := startPyWorker(t, h, token, "--type", "py", "--lease-s", "30", "--work-s", "1", "--heartbeat-s", "0.1")
		running("the second run's decision at the new revision", upd.Task.Revision)

		zombie := startPyWorker(t, h, token, "--resume", saved)
		if code := zombie.wait(t); code != 4 || !strings.Contains(zombie.stderr.String(), "lease_lost") {
			t.Fatalf("zombie copy: exit %d, want 4 (refused, lease_lost):\n%s", code, zombie.stderr.String())
		}
		if code := second.wait(t); code != 0 {
			t.Fatalf("second run: exit %d:\n%s", code, second.stderr.String())
		}
		done, err := op.GetTask(ctx, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := "at revision " + strconv.Itoa(upd.Task.Revision)
		if done.State != cks.TaskCompleted || !strings.HasSuffix(done.Result, want) || done.Restarts != 1 {
			t.Fatalf("finished task: %s result %q restarts %d, want COMPLETED by the second run (%q)", done.State, done.Result, done.Restarts, want)
		}
	})
}
