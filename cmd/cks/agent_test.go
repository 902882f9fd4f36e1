package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/runtime/worker"
	"github.com/cks-dev/cks/internal/service/liveness"
)

// fastAgent are agent flags that make a test quick: liveness every 0.3 s
// (stopped 0.9 s after a crash) and a short idle wait.
var fastAgent = []string{"--liveness-interval", "0.3", "--poll-interval", "0.2"}

// blockUntilGo is an exec agent command: it records its pid, then blocks
// until the file "go" appears in $T_DIR.
const blockUntilGo = `echo $$ > "$T_DIR/pid.$CKS_TASK_ID"
while [ ! -e "$T_DIR/go" ]; do sleep 0.02; done
echo "finished $CKS_TASK_ID"`

// processes lists the hub's processes through the CLI (`process list --json`).
func processes(t testing.TB, h *hubProc) []cks.Process {
	t.Helper()
	r := runCKS(t, nil, "process", "list", "--json", "--data-dir", string(h.dir))
	if r.code != 0 {
		t.Fatalf("process list --json: exit %d\n%s", r.code, r.stderr)
	}
	var out struct {
		Processes []cks.Process `json:"processes"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("process list --json: %v\n%s", err, r.stdout)
	}
	return out.Processes
}

// processOf waits until the process with pid has reported and returns its row.
func processOf(t testing.TB, h *hubProc, pid int) cks.Process {
	t.Helper()
	var p cks.Process
	waitFor(t, fmt.Sprintf("liveness row of pid %d", pid), func() bool {
		for _, q := range processes(t, h) {
			if q.PID == pid {
				p = q
				return true
			}
		}
		return false
	})
	return p
}

// processByID returns the row of instance id (fails when it is missing).
func processByID(t testing.TB, h *hubProc, id string) cks.Process {
	t.Helper()
	for _, p := range processes(t, h) {
		if p.InstanceID == id {
			return p
		}
	}
	t.Fatalf("no liveness row for instance %s", id)
	return cks.Process{}
}

func newTask(t testing.TB, api *client.Client, typ, title string) int64 {
	t.Helper()
	task, _, err := api.CreateTask(context.Background(), cks.NewTask{Type: typ, Title: title})
	if err != nil {
		t.Fatal(err)
	}
	return task.ID
}

func getTask(t testing.TB, api *client.Client, id int64) cks.Task {
	t.Helper()
	task, err := api.GetTask(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func waitState(t testing.TB, api *client.Client, id int64, want cks.TaskState) cks.Task {
	t.Helper()
	var task cks.Task
	waitFor(t, fmt.Sprintf("task %d %s", id, want), func() bool {
		task = getTask(t, api, id)
		return task.State == want
	})
	return task
}

// TestAgentStopPaths: SIGTERM and a remote stop request (`cks process stop
// ID`) end an exec agent the same way: it logs the drain, finishes the task
// in hand (COMPLETED), claims nothing more, exits 0, and its row reads
// stopped at once (exited_at).
func TestAgentStopPaths(t *testing.T) {
	forBackends(t, func(t *testing.T, db testDB) {
		h := startHub(t, "serve", "--database", db.url)
		api := client.New(h.url, h.token)
		for _, path := range []string{"sigterm", "remote"} {
			t.Run(path, func(t *testing.T) {
				dir := t.TempDir()
				typ := "drain-" + path
				first := newTask(t, api, typ, "in hand at the stop")
				a := startAgent(t, []string{"T_DIR=" + dir}, append([]string{"exec", "--database", db.url, "--types", typ},
					append(fastAgent, "--", "sh", "-c", blockUntilGo)...)...)
				readPID(t, filepath.Join(dir, fmt.Sprint("pid.", first)))
				waitState(t, api, first, cks.TaskRunning)
				// The row learns of the task from a heartbeat written just
				// after the claim, not with it.
				var row cks.Process
				waitFor(t, fmt.Sprintf("the agent's row to hold task %d", first), func() bool {
					row = processOf(t, h, a.cmd.Process.Pid)
					return row.Status == cks.ProcessAlive && row.CurrentTaskID != nil && *row.CurrentTaskID == first
				})
				second := newTask(t, api, typ, "created before the stop, never claimed")

				switch path {
				case "sigterm":
					a.cmd.Process.Signal(syscall.SIGTERM)
				case "remote":
					r := runCKS(t, nil, "process", "stop", row.InstanceID, "--json", "--data-dir", string(h.dir))
					if r.code != 0 || !strings.Contains(r.stdout, `"found": true`) {
						t.Fatalf("process stop %s: exit %d\n%s%s", row.InstanceID, r.code, r.stdout, r.stderr)
					}
				}
				a.waitLog(t, agents.MsgDraining)
				if a.exited() {
					t.Fatalf("agent exited before its task finished\n%s", a.stderr.String())
				}
				if s := getTask(t, api, first).State; s != cks.TaskRunning {
					t.Fatalf("task in hand is %s during the drain, want RUNNING", s)
				}
				os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
				if code := a.wait(t); code != 0 {
					t.Fatalf("agent exit status %d after %s, want 0\n%s", code, path, a.stderr.String())
				}

				// At once: no waiting for the TTL.
				p := processByID(t, h, row.InstanceID)
				if p.Status != cks.ProcessStopped || p.ExitedAt.IsZero() || !p.LastHeartbeatAt.Equal(p.ExitedAt) || p.CurrentTaskID != nil {
					t.Fatalf("row after a graceful exit: %+v, want stopped, exited at its last heartbeat, no task", p)
				}
				r := runCKS(t, nil, "process", "status", "exec", "--json", "--data-dir", string(h.dir))
				if r.code != 0 || !strings.Contains(r.stdout, `"instance_id": "`+row.InstanceID) || !strings.Contains(r.stdout, `"status": "stopped"`) {
					t.Fatalf("process status exec: exit %d\n%s%s", r.code, r.stdout, r.stderr)
				}
				r = runCKS(t, nil, "process", "list", "--data-dir", string(h.dir))
				if !strings.Contains(r.stdout, "exited ") || !strings.Contains(r.stdout, "s ago") || strings.Contains(r.stdout, "d ago") {
					t.Fatalf("process list shows a graceful exit as:\n%s", r.stdout)
				}
				if task := getTask(t, api, first); task.State != cks.TaskCompleted || task.Result != fmt.Sprintf("finished %d\n", first) {
					t.Fatalf("task in hand: %s %q, want COMPLETED with the command's output", task.State, task.Result)
				}
				if task := getTask(t, api, second); task.State != cks.TaskOpen || task.Attempts != 0 {
					t.Fatalf("task created during the run: %s, %d attempts; want OPEN, never claimed", task.State, task.Attempts)
				}
			})
		}
	})
}

// TestExecAgentConcurrency: `cks agent exec --concurrency 3` is one
// process, one row, running three commands at once; stopped, it finishes
// them and claims no fourth.
func TestExecAgentConcurrency(t *testing.T) {
	forBackends(t, func(t *testing.T, db testDB) {
		h := startHub(t, "serve", "--database", db.url)
		api := client.New(h.url, h.token)
		dir := t.TempDir()
		var ids []int64
		for i := range 4 {
			ids = append(ids, newTask(t, api, "par", fmt.Sprint("task ", i)))
		}
		a := startAgent(t, []string{"T_DIR=" + dir}, append([]string{"exec", "--database", db.url, "--types", "par", "--concurrency", "3"},
			append(fastAgent, "--", "sh", "-c", blockUntilGo)...)...)
		var running []int64
		waitFor(t, "three commands running at once", func() bool {
			running = running[:0]
			for _, id := range ids {
				if _, err := os.Stat(filepath.Join(dir, fmt.Sprint("pid.", id))); err == nil {
					running = append(running, id)
				}
			}
			return len(running) == 3
		})
		for _, id := range running {
			if task := getTask(t, api, id); task.State != cks.TaskRunning {
				t.Fatalf("task %d is %s while its command runs", id, task.State)
			}
		}
		n := 0
		for _, p := range processes(t, h) {
			if p.PID == a.cmd.Process.Pid && p.Status == cks.ProcessAlive {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d alive rows of the agent's process, want 1", n)
		}
		a.cmd.Process.Signal(syscall.SIGTERM)
		a.waitLog(t, agents.MsgDraining)
		os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
		if code := a.wait(t); code != 0 {
			t.Fatalf("agent exit status %d, want 0\n%s", code, a.stderr.String())
		}
		for _, id := range ids {
			task := getTask(t, api, id)
			if slices.Contains(running, id) != (task.State == cks.TaskCompleted) || (task.State != cks.TaskCompleted && task.Attempts != 0) {
				t.Fatalf("task %d: %s, %d attempts; running at the stop: %v", id, task.State, task.Attempts, slices.Contains(running, id))
			}
		}
	})
}

// TestAgentKilled: `kill -9` of an exec agent holding a task (issue 12
// items 7 and 8). Its command dies with it, the grandchild the command
// started included, so nothing of the first attempt runs beside the next.
// Its row reads alive until 3 × its liveness interval has passed since its
// last heartbeat, then stopped. The hub's own lease reaper, with short
// configured values (CKS_STALE_WINDOW=3s, agents' lease heartbeat 1 s, the
// reaper every 1 s), reclaims the task no sooner than one window after its
// last lease heartbeat and within about one window plus one reaper interval
// of it — not the 5-minute default — and a second agent completes it.
func TestAgentKilled(t *testing.T) {
	const window, reaperEvery = 3 * time.Second, time.Second
	forBackends(t, func(t *testing.T, db testDB) {
		h := startHubEnv(t, "serve", []string{"CKS_STALE_WINDOW=" + window.String(),
			"CKS_LEASE_REAPER_SWEEPER_INTERVAL=" + reaperEvery.String()}, "--database", db.url)
		api := client.New(h.url, h.token)
		dir := t.TempDir()
		// The first attempt starts a grandchild and waits for it, forever; a
		// later one (after the reclaim) finishes.
		cmd := `echo $$ > "$T_DIR/pid.$CKS_TASK_ATTEMPT"
if [ "$CKS_TASK_ATTEMPT" = 1 ]; then sleep 1000 & echo $! > "$T_DIR/child.1"; wait; fi
echo "attempt $CKS_TASK_ATTEMPT"`
		agentArgs := append([]string{"exec", "--database", db.url, "--types", "crash"}, append(fastAgent, "--", "sh", "-c", cmd)...)
		env := []string{"T_DIR=" + dir, "CKS_STALE_WINDOW=" + window.String(), "CKS_EXEC_HEARTBEAT_INTERVAL=1"}
		id := newTask(t, api, "crash", "outlives its agent")
		a := startAgent(t, env, agentArgs...)
		cmdPID, childPID := readPID(t, filepath.Join(dir, "pid.1")), readPID(t, filepath.Join(dir, "child.1"))
		t.Cleanup(func() {
			for _, pid := range []int{cmdPID, childPID} {
				if !pidGone(pid) {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
		waitState(t, api, id, cks.TaskRunning)
		row := processOf(t, h, a.cmd.Process.Pid)

		a.cmd.Process.Signal(syscall.SIGKILL)
		a.wait(t)
		killed := time.Now()
		held := getTask(t, api, id) // its lease frozen at the last heartbeat
		waitFor(t, "the killed agent's command and its grandchild to die", func() bool { return pidGone(cmdPID) && pidGone(childPID) })

		ttl := time.Duration(liveness.TTLFactor * row.LivenessIntervalS * float64(time.Second))
		if ttl < 899*time.Millisecond || ttl > 901*time.Millisecond {
			t.Fatalf("TTL %s, want 3 × 0.3 s", ttl)
		}
		// Every read: alive exactly while the frozen heartbeat is younger
		// than the TTL; the heartbeat is never backdated (no graceful exit).
		var sawAlive bool
		var last time.Time
		waitFor(t, "killed agent to read stopped", func() bool {
			p := processByID(t, h, row.InstanceID)
			if !p.ExitedAt.IsZero() {
				t.Fatalf("a killed agent wrote a graceful exit: %+v", p)
			}
			if !last.IsZero() && !p.LastHeartbeatAt.Equal(last) {
				// A tick in flight at the kill may land once; later ones may not.
				if time.Since(killed) > time.Second {
					t.Fatalf("heartbeat moved from %s to %s after the kill", last, p.LastHeartbeatAt)
				}
			}
			last = p.LastHeartbeatAt
			young := time.Duration(p.HeartbeatAgeS*float64(time.Second)) <= ttl
			if young != (p.Status == cks.ProcessAlive) {
				t.Fatalf("status %s with heartbeat age %.3fs and TTL %s", p.Status, p.HeartbeatAgeS, ttl)
			}
			sawAlive = sawAlive || p.Status == cks.ProcessAlive
			return p.Status == cks.ProcessStopped
		})
		if !sawAlive {
			t.Log("the first read after the kill was already past the TTL (slow machine): alive phase not observed")
		}
		if since := time.Since(last); since < ttl {
			t.Fatalf("read stopped %s after the last heartbeat, before the TTL %s", since, ttl)
		}

		// A second agent takes the task once the reaper has given it back.
		b := startAgent(t, env, agentArgs...)
		task := waitState(t, api, id, cks.TaskCompleted)
		if task.Attempts != 2 || task.Result != "attempt 2\n" {
			t.Fatalf("reclaimed task: attempts %d, result %q; want attempt 2 completed", task.Attempts, task.Result)
		}
		var reclaimed time.Time
		for _, ev := range task.Events {
			if ev.Actor == "reaper" && ev.To == cks.TaskOpen && ev.Reason == "lease expired" {
				reclaimed = ev.At
			}
		}
		if held.State != cks.TaskRunning || held.LeaseRenewedAt.IsZero() || reclaimed.IsZero() {
			t.Fatalf("task at the kill %s, last renewed %s; reclaimed at %s (events %+v)", held.State, held.LeaseRenewedAt, reclaimed, task.Events)
		}
		// Both times are the store's: the bound is exact below, and above it
		// allows a loaded machine a generous 20 s beyond one reaper interval.
		if waited := reclaimed.Sub(held.LeaseRenewedAt); waited < window || waited > window+reaperEvery+20*time.Second {
			t.Fatalf("reclaimed %s after the last lease heartbeat; want at least the window %s and about window + reaper interval %s",
				waited, window, window+reaperEvery)
		}
		b.waitLog(t, fmt.Sprintf(`msg="task done" process_kind=exec instance_id=%s task_id=%d`, processOf(t, h, b.cmd.Process.Pid).InstanceID, id))
		b.cmd.Process.Signal(syscall.SIGTERM)
		if code := b.wait(t); code != 0 {
			t.Fatalf("second agent exit status %d\n%s", code, b.stderr.String())
		}
	})
}

// TestExecAgentTaskStop: `cks task stop` of a task whose exec command runs:
// the command's whole process group is gone, the abort is confirmed, the task
// is STOPPED and the agent keeps running; `cks task start` runs the command
// again from the top (CKS_TASK_RESTART=1) and the task completes.
func TestExecAgentTaskStop(t *testing.T) {
	forBackends(t, func(t *testing.T, db testDB) {
		h := startHub(t, "serve", "--database", db.url)
		api := client.New(h.url, h.token)
		dir := t.TempDir()
		// A shell with a child of its own; the first run never ends by itself.
		cmd := `R=$CKS_TASK_RESTART
sleep 1000 & echo $! > "$T_DIR/child.$R"
echo $$ > "$T_DIR/pid.$R"
if [ "$R" != 0 ]; then kill $!; echo "run $R from the top"; exit 0; fi
while :; do sleep 0.02; done`
		a := startAgent(t, []string{"T_DIR=" + dir}, append([]string{"exec", "--database", db.url, "--types", "long"},
			append(fastAgent, "--", "sh", "-c", cmd)...)...)
		id := newTask(t, api, "long", "a long command")
		shell, child := readPID(t, filepath.Join(dir, "pid.0")), readPID(t, filepath.Join(dir, "child.0"))
		t.Cleanup(func() { syscall.Kill(-shell, syscall.SIGKILL) })
		waitState(t, api, id, cks.TaskRunning)
		if pidGone(shell) || pidGone(child) {
			t.Fatal("command not running before the stop")
		}

		r := runCKS(t, nil, "task", "stop", fmt.Sprint(id), "--reason", "operator hold", "--deadline", "20s", "--json", "--data-dir", string(h.dir))
		var res cks.TaskStopResult
		if err := json.Unmarshal([]byte(r.stdout), &res); r.code != 0 || err != nil {
			t.Fatalf("task stop: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
		}
		if res.Task.State != cks.TaskStopped || res.Abort == nil || res.Abort.Outcome != cks.AbortConfirmed ||
			!strings.HasPrefix(res.Abort.Executor, "exec/") {
			t.Fatalf("task stop result: %s %+v; want STOPPED, abort confirmed by the exec agent", res.Task.State, res.Abort)
		}
		// Confirmed means the group is gone already: no waiting here.
		for _, pid := range []int{shell, child} {
			if !pidGone(pid) {
				t.Errorf("pid %d of the command's group still runs after the confirmed abort", pid)
			}
		}
		if task := getTask(t, api, id); task.State != cks.TaskStopped {
			t.Fatalf("task is %s after stop, want STOPPED", task.State)
		}
		if a.exited() {
			t.Fatalf("the agent exited on a task stop\n%s", a.stderr.String())
		}

		r = runCKS(t, nil, "task", "start", fmt.Sprint(id), "--reason", "go on", "--data-dir", string(h.dir))
		if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("task %d started", id)) {
			t.Fatalf("task start: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		task := waitState(t, api, id, cks.TaskCompleted)
		if task.Restarts != 1 || task.Result != "run 1 from the top\n" {
			t.Fatalf("restarted task: restarts %d, result %q; want the command run again with CKS_TASK_RESTART=1", task.Restarts, task.Result)
		}
		if _, err := os.Stat(filepath.Join(dir, "pid.1")); err != nil {
			t.Fatalf("second run did not start from the top: %v", err)
		}
		a.cmd.Process.Signal(syscall.SIGTERM)
		if code := a.wait(t); code != 0 {
			t.Fatalf("agent exit status %d\n%s", code, a.stderr.String())
		}
	})
}

// TestExecAgentAttemptTimeout: a task created with `cks task create
// --timeout 2s --max-attempts 2` whose exec command never ends (`sleep 1000
// & sleep 1000`, a shell and two children) is ended by the hub's lease
// reaper at its deadline, however alive its agent is: each attempt's whole
// process tree is killed and its abort confirmed by the agent, the first
// attempt is retried and the second fails the task by max_attempts, each
// ending with the reason "timed out after 2s".
func TestExecAgentAttemptTimeout(t *testing.T) {
	forBackends(t, func(t *testing.T, db testDB) {
		h := startHubEnv(t, "serve", []string{"CKS_LEASE_REAPER_SWEEPER_INTERVAL=1s"}, "--database", db.url)
		api := client.New(h.url, h.token)
		dir := t.TempDir()
		cmd := `A=$CKS_TASK_ATTEMPT
echo $$ > "$T_DIR/pid.$A"
sleep 1000 & echo $! > "$T_DIR/child.$A"
sleep 1000 & echo $! > "$T_DIR/second.$A"
wait`
		a := startAgent(t, []string{"T_DIR=" + dir}, append([]string{"exec", "--database", db.url, "--types", "stuck"},
			append(fastAgent, "--", "sh", "-c", cmd)...)...)
		r := runCKS(t, nil, "task", "create", "--type", "stuck", "--title", "never ends", "--timeout", "2s",
			"--max-attempts", "2", "--json", "--data-dir", string(h.dir))
		var created cks.Task
		if err := json.Unmarshal([]byte(r.stdout), &created); r.code != 0 || err != nil {
			t.Fatalf("task create --timeout 2s: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
		}
		if created.AttemptTimeout != "2s" {
			t.Fatalf("created task's attempt_timeout %q, want 2s", created.AttemptTimeout)
		}
		var pids []int
		for _, attempt := range []string{"1", "2"} {
			tree := []int{readPID(t, filepath.Join(dir, "pid."+attempt)), readPID(t, filepath.Join(dir, "child."+attempt)),
				readPID(t, filepath.Join(dir, "second."+attempt))}
			pids = append(pids, tree...)
			t.Cleanup(func() {
				for _, pid := range tree {
					if !pidGone(pid) {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			})
			waitFor(t, "attempt "+attempt+"'s process tree to be killed", func() bool {
				return pidGone(tree[0]) && pidGone(tree[1]) && pidGone(tree[2])
			})
		}
		task := waitState(t, api, created.ID, cks.TaskFailed)
		var timedOut []cks.TaskEvent
		for _, ev := range task.Events {
			if strings.HasPrefix(ev.Reason, "timed out after 2s") {
				timedOut = append(timedOut, ev)
			}
		}
		if len(timedOut) != 2 || timedOut[0].To != cks.TaskOpen || timedOut[1].To != cks.TaskFailed || task.Attempts != 2 {
			t.Fatalf("events %+v; want two attempts timed out after 2s, the first retried, the second FAILED", task.Events)
		}
		waitFor(t, "both aborts confirmed by the agent", func() bool {
			task = getTask(t, api, created.ID)
			return len(task.Aborts) == 2 && task.Aborts[0].Outcome == cks.AbortConfirmed && task.Aborts[1].Outcome == cks.AbortConfirmed
		})
		for _, ab := range task.Aborts {
			if ab.Reason != "timed out after 2s" || !strings.HasPrefix(ab.Executor, "exec/") {
				t.Fatalf("abort %+v; want reason timed out after 2s, of the exec agent", ab)
			}
		}
		if a.exited() {
			t.Fatalf("the agent exited on a timed-out attempt\n%s", a.stderr.String())
		}
		a.cmd.Process.Signal(syscall.SIGTERM)
		if code := a.wait(t); code != 0 {
			t.Fatalf("agent exit status %d\n%s", code, a.stderr.String())
		}
	})
}

// TestExecAgentBudget (issue 43 item 2): an exec agent's command reports
// what it spends on its reports pipe (fd 3, CKS_REPORT_FD) without
// credentials of its own; a line that is no report is skipped; the report
// that uses the task's max_tokens up moves the task to NEEDS_INPUT with the
// budget's question, and the agent kills the command's process tree
// mid-run and confirms the abort.
func TestExecAgentBudget(t *testing.T) {
	forBackends(t, func(t *testing.T, db testDB) {
		h := startHubEnv(t, "serve", nil, "--database", db.url)
		api := client.New(h.url, h.token)
		dir := t.TempDir()
		cmd := `echo $$ > "$T_DIR/pid"
sleep 1000 & echo $! > "$T_DIR/child"
echo 'not a report' >&$CKS_REPORT_FD
echo '{"usage":{"model":"gpt-5","input_tokens":60,"output_tokens":10,"cost":"0.01"}}' >&$CKS_REPORT_FD
echo '{"usage":{"model":"gpt-5","input_tokens":40,"cost":"0.002"}}' >&$CKS_REPORT_FD
wait`
		a := startAgent(t, []string{"T_DIR=" + dir}, append([]string{"exec", "--database", db.url, "--types", "llm"},
			append(fastAgent, "--", "sh", "-c", cmd)...)...)
		r := runCKS(t, nil, "task", "create", "--type", "llm", "--title", "spends", "--max-tokens", "100",
			"--json", "--data-dir", string(h.dir))
		var created cks.Task
		if err := json.Unmarshal([]byte(r.stdout), &created); r.code != 0 || err != nil {
			t.Fatalf("task create --max-tokens 100: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
		}
		tree := []int{readPID(t, filepath.Join(dir, "pid")), readPID(t, filepath.Join(dir, "child"))}
		t.Cleanup(func() {
			for _, pid := range tree {
				if !pidGone(pid) {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
		waitFor(t, "the command's process tree to be killed", func() bool { return pidGone(tree[0]) && pidGone(tree[1]) })
		task := waitState(t, api, created.ID, cks.TaskNeedsInput)
		if !strings.Contains(task.Question, "spent 110 tokens of the 100 allowed (max_tokens)") {
			t.Fatalf("question %q; want it to name the 110 tokens spent of the 100 allowed", task.Question)
		}
		if task.Spend == nil || task.Spend.Tokens != 110 || task.Spend.Reports != 2 || task.Spend.Cost.String() != "0.012" {
			t.Fatalf("spend %+v; want 110 tokens in 2 reports costing 0.012 (the line that is no report skipped)", task.Spend)
		}
		waitFor(t, "the abort confirmed by the agent", func() bool {
			task = getTask(t, api, created.ID)
			return len(task.Aborts) == 1 && task.Aborts[0].Outcome == cks.AbortConfirmed
		})
		if a.exited() {
			t.Fatalf("the agent exited on a task over its budget\n%s", a.stderr.String())
		}
		if !strings.Contains(a.stderr.String(), "not a report") {
			t.Errorf("the agent's log does not name the line that is no report:\n%s", a.stderr.String())
		}
		a.cmd.Process.Signal(syscall.SIGTERM)
		if code := a.wait(t); code != 0 {
			t.Fatalf("agent exit status %d\n%s", code, a.stderr.String())
		}
	})
}

// TestAgentBadInput: usage errors exit 2 naming what was wrong.
func TestAgentBadInput(t *testing.T) {
	dir := t.TempDir()
	r := runCKS(t, nil, "agent", "nosuch", "--data-dir", dir)
	if r.code != 2 || !strings.Contains(r.stderr, `"nosuch"`) {
		t.Fatalf("agent nosuch: exit %d %s, want 2", r.code, r.stderr)
	}
	for _, k := range agents.Kinds() {
		if !strings.Contains(r.stderr, k) {
			t.Errorf("agent nosuch: %q does not list %s", r.stderr, k)
		}
	}
	r = runCKS(t, []string{"CKS_CRITIC_LIVENESS_INTERVAL=x"}, "agent", "critic", "--data-dir", dir)
	if r.code != 2 || !strings.Contains(r.stderr, "CKS_CRITIC_LIVENESS_INTERVAL") {
		t.Fatalf("CKS_CRITIC_LIVENESS_INTERVAL=x: exit %d %s, want 2 naming the variable", r.code, r.stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"agent"}, "needs a kind"},
		{[]string{"agent", "exec", "--types", "x"}, "a command after --"},
		{[]string{"agent", "critic", "--", "true"}, "only agent exec takes a command"},
		{[]string{"agent", "critic", "--liveness-interval", "-1"}, "positive"},
		{[]string{"agent", "exec", "--types", "x", "--concurrency", "0", "--", "true"}, "concurrency"},
		{[]string{"dev", "--exec-types", "x"}, "command after --"},
		{[]string{"dev", "--", "true"}, "needs --exec-types"},
		// A command that cannot be run is refused at start, not by every
		// task the agent would claim (and dev starts no hub for it).
		{[]string{"agent", "exec", "--types", "x", "--", "./scripts/no-such-agent.sh"},
			`exec agent: command "./scripts/no-such-agent.sh" cannot be run (a path taken from the working directory`},
		{[]string{"agent", "exec", "--types", "x", "--", "no-such-program-of-cks"}, "looked up on $PATH"},
		{[]string{"dev", "--exec-types", "x", "--", "./scripts/no-such-agent.sh"}, `dev: exec agent: command "./scripts/no-such-agent.sh" cannot be run`},
	} {
		r := runCKS(t, nil, append(c.args, "--data-dir", filepath.Join(dir, "never"))...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d %q, want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "never")); err == nil {
		t.Error("a usage error created the data directory")
	}
}

// TestAgentSecondSignal: a second SIGTERM during the drain interrupts the
// task in hand at once and gives it back — its command killed, the task
// OPEN with its attempt not counted, exit 0 — and a third exits at once,
// non-zero, with the task left RUNNING for its lease to run out (a command
// that ignores SIGTERM keeps the give-back waiting for its kill grace
// meanwhile), and its command killed.
func TestAgentSecondSignal(t *testing.T) {
	h := startHub(t, "serve")
	api := client.New(h.url, h.token)
	for _, signals := range []int{2, 3} {
		t.Run(fmt.Sprint(signals, " signals"), func(t *testing.T) {
			dir := t.TempDir()
			t.Cleanup(func() { os.WriteFile(filepath.Join(dir, "go"), nil, 0o644) })
			typ := fmt.Sprint("slow", signals)
			id := newTask(t, api, typ, "never finishes here")
			command := blockUntilGo
			if signals == 3 {
				command = `trap "" TERM; ` + blockUntilGo
			}
			a := startAgent(t, []string{"T_DIR=" + dir}, append([]string{"exec", "--data-dir", string(h.dir), "--types", typ,
				"--drain-timeout", "0"}, append(fastAgent, "--", "sh", "-c", command)...)...)
			shell := readPID(t, filepath.Join(dir, fmt.Sprint("pid.", id)))
			t.Cleanup(func() { syscall.Kill(-shell, syscall.SIGKILL) })
			waitState(t, api, id, cks.TaskRunning)
			a.cmd.Process.Signal(syscall.SIGTERM)
			a.waitLog(t, agents.MsgDraining)
			a.cmd.Process.Signal(syscall.SIGTERM)
			a.waitLog(t, "second signal")
			if signals == 2 {
				if code := a.wait(t); code != 0 {
					t.Fatalf("exit status %d after a second SIGTERM, want 0 (the task given back)\n%s", code, a.stderr.String())
				}
				task := getTask(t, api, id)
				if last := task.Events[len(task.Events)-1]; task.State != cks.TaskOpen || task.Attempts != 0 ||
					!strings.HasPrefix(last.Reason, worker.ReasonShutdown) {
					t.Fatalf("task %s with %d attempts, last event %+v; want OPEN, its attempt given back", task.State, task.Attempts, last)
				}
			} else {
				a.cmd.Process.Signal(syscall.SIGTERM)
				if code := a.wait(t); code == 0 {
					t.Fatalf("exit status 0 after a third SIGTERM, want non-zero\n%s", a.stderr.String())
				}
				if !strings.Contains(a.stderr.String(), "third signal") {
					t.Fatalf("no word of the third signal:\n%s", a.stderr.String())
				}
				if task := getTask(t, api, id); task.State != cks.TaskRunning {
					t.Fatalf("task is %s after the hard exit, want RUNNING (its lease left to run out)", task.State)
				}
			}
			// The command does not outlive the agent that exited.
			waitFor(t, "the command of the agent that exited to die", func() bool { return pidGone(shell) })
		})
	}
}

// TestAgentRefusesAMissingDatabase (issue 39.9): `cks agent` finds its
// database as the CLI finds .cks (here or above); where there is none it
// refuses to start, naming where it looked and what to do, and creates
// nothing (on main it created an empty database and waited there forever);
// --create makes one; and its start-up log names the database it opened.
func TestAgentRefusesAMissingDatabase(t *testing.T) {
	empty := t.TempDir()
	r := runCKSIn(t, empty, nil, "agent", "critic")
	want := filepath.Join(empty, ".cks", "cks.db")
	if r.code != 1 || !strings.Contains(r.stderr, "no database at "+want) || !strings.Contains(r.stderr, "--create") {
		t.Fatalf("agent without a database: exit %d %s; want 1 naming %s and --create", r.code, r.stderr, want)
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Fatalf("the refused agent made %q", entries[0].Name())
	}
	named := filepath.Join(t.TempDir(), "typo.db")
	if r := runCKS(t, nil, "agent", "critic", "--database", named); r.code != 1 || !strings.Contains(r.stderr, "no database at "+named) ||
		!strings.Contains(r.stderr, "--database") {
		t.Fatalf("agent on a missing --database: exit %d %s", r.code, r.stderr)
	}
	a := startAgentIn(t, empty, append([]string{"critic", "--create"}, fastAgent...)...)
	a.waitLog(t, `msg="agent database opened" process_kind=critic database=`+want)
	a.kill()

	// A database in a .cks above the working directory: found, and named.
	top := t.TempDir()
	sub := filepath.Join(top, "deep", "below")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	openStore(t, datadir.Dir(filepath.Join(top, ".cks"))).Close()
	b := startAgentIn(t, sub, append([]string{"critic"}, fastAgent...)...)
	b.waitLog(t, "database="+filepath.Join(top, ".cks", "cks.db"))
}
