package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/runtime/worker"
	"github.com/cks-dev/cks/internal/service/liveness"
)

// parentPID is the parent of process pid, from /proc (0 when unknown).
func parentPID(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	var state string
	var ppid int
	fmt.Sscan(s[i+1:], &state, &ppid)
	return ppid
}

// TestDevStartsAgents: `cks dev` starts the four seed agents and an exec
// agent as its children on the same database; they read alive, the exec
// agent works a task, a child that dies is logged, recorded as exited and
// restarted, and
// SIGTERM to cks dev stops the others gracefully (exited_at) before the
// hub exits, leaving no child behind.
func TestDevStartsAgents(t *testing.T) {
	forBackends(t, func(t *testing.T, db testDB) {
		args := []string{"--exec-types", "echo", "--", "sh", "-c", `cat >/dev/null; echo "echoed $CKS_TASK_ID"`}
		if db.backend != "sqlite" {
			args = append([]string{"--database", db.url}, args...)
		}
		h := startHub(t, "dev", args...) // SQLite: the embedded default in the data directory
		api := client.New(h.url, h.token)
		kinds := []string{"critic", "enrichment", "exec", "fork_resolution", "pipeline"}

		pids := map[string]int{}
		ids := map[string]string{}
		waitFor(t, "the five agents of cks dev alive", func() bool {
			for _, p := range processes(t, h) {
				if p.Status == cks.ProcessAlive && parentPID(p.PID) == h.cmd.Process.Pid {
					pids[p.ProcessKind], ids[p.ProcessKind] = p.PID, p.InstanceID
				}
			}
			return len(pids) == len(kinds)
		})
		for _, k := range kinds {
			if pids[k] == 0 {
				t.Fatalf("no alive %s child of cks dev: %v", k, pids)
			}
		}
		id := newTask(t, api, "echo", "for the exec agent")
		if task := waitState(t, api, id, cks.TaskCompleted); task.Result != fmt.Sprintf("echoed %d\n", id) {
			t.Fatalf("exec agent of cks dev: result %q", task.Result)
		}

		// A child that crashes is logged and restarted; its row, which it
		// could not write, is recorded exited at once.
		syscall.Kill(pids["pipeline"], syscall.SIGKILL)
		waitFor(t, "cks dev to log the dead pipeline agent", func() bool {
			return strings.Contains(h.stderr.String(), `msg="agent process exited unexpectedly; restarting it" process_kind=pipeline`) &&
				strings.Contains(h.stderr.String(), `msg="agent recorded as exited, its leases released" process_kind=pipeline`)
		})
		for _, p := range processes(t, h) {
			if p.InstanceID == ids["pipeline"] && (p.Status != cks.ProcessStopped || p.ExitedAt.IsZero()) {
				t.Fatalf("the killed pipeline agent reads %s (exited %s), want exited at once", p.Status, p.ExitedAt)
			}
		}
		restarted := 0
		waitFor(t, "cks dev to restart the pipeline agent", func() bool {
			for _, p := range processes(t, h) {
				if p.ProcessKind == "pipeline" && p.Status == cks.ProcessAlive && p.InstanceID != ids["pipeline"] &&
					parentPID(p.PID) == h.cmd.Process.Pid {
					restarted = p.PID
				}
			}
			return restarted != 0
		})
		pids["pipeline (restarted)"] = restarted

		h.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-h.done:
			if err != nil {
				t.Fatalf("cks dev exited with %v after SIGTERM\n%s", err, h.stderr.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("cks dev did not stop after SIGTERM\n%s", h.stderr.String())
		}
		h.done <- nil // for the cleanup

		for k, pid := range pids {
			if !pidGone(pid) {
				t.Errorf("%s agent (pid %d) still runs after cks dev exited", k, pid)
			}
		}
		var s *backend.Backend
		if db.backend == "sqlite" {
			s = openStore(t, h.dir)
		} else {
			s = db.open(t)
		}
		rows, err := s.Liveness.ListAgentLiveness(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(kinds)+1 {
			t.Fatalf("%d liveness rows, want one per agent and the restarted pipeline agent's: %+v", len(rows), rows)
		}
		for _, r := range rows {
			// Every row reads exited: the killed pipeline agent's recorded by
			// cks dev, the others' by their own graceful exit.
			if r.ExitedAt.IsZero() || liveness.StatusAt(r, time.Now()) != cks.ProcessStopped {
				t.Errorf("%s row after cks dev stopped: heartbeat %s, exited %s, want exited (stopped at once)", r.ProcessKind, r.LastHeartbeatAt, r.ExitedAt)
			}
		}

		log := h.stderr.String()
		for _, k := range kinds {
			if !strings.Contains(log, fmt.Sprintf("%-15s | ", k)) {
				t.Errorf("cks dev's stderr has no line prefixed with %s", k)
			}
		}
		if a, b := strings.Index(log, `msg="agents stopped"`), strings.Index(log, `msg="hub shutting down"`); a < 0 || b < a {
			t.Errorf("agents not stopped before the hub shut down:\n%s", log)
		}
	})
}

// TestDevBanner: the banner names the agents and how to see their liveness;
// with --no-agents there are none, and it says how to start one.
func TestDevBanner(t *testing.T) {
	for _, noAgents := range []bool{false, true} {
		t.Run(fmt.Sprint("no-agents=", noAgents), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args := []string{"dev", "--listen", "127.0.0.1:0", "--data-dir", dir}
			if noAgents {
				args = append(args, "--no-agents")
			}
			cmd := exec.Command(cksBin, args...)
			cmd.Env = cleanEnv()
			out, errb := &syncBuffer{}, &syncBuffer{}
			cmd.Stdout, cmd.Stderr = out, errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			waitFor(t, "dev banner", func() bool { return strings.Contains(out.String(), "Press Ctrl-C") })
			banner := out.String()
			if !strings.Contains(banner, "process list --data-dir "+dir) {
				t.Errorf("banner does not say how to see the agents' liveness:\n%s", banner)
			}
			for _, k := range []string{"critic", "enrichment", "fork_resolution", "pipeline"} {
				if got := strings.Contains(banner, k+" (pid "); got == noAgents {
					t.Errorf("banner lists %s: %v, want %v:\n%s", k, got, !noAgents, banner)
				}
			}
			// It says what is true: with no agents, no logs of theirs, how to
			// start one, and the CLI as it was run.
			if noAgents && (!strings.Contains(banner, "none (--no-agents); start one beside the hub with: "+cksBin+" agent KIND --data-dir "+dir) ||
				strings.Contains(banner, "their logs") || !strings.Contains(banner, "Press Ctrl-C to stop the hub.")) {
				t.Errorf("banner with --no-agents:\n%s", banner)
			}
			if !noAgents && (!strings.Contains(banner, "their logs are on this stderr") || !strings.Contains(banner, "the agents first, then the hub")) {
				t.Errorf("banner with agents:\n%s", banner)
			}
			if !strings.Contains(banner, "CLI:     "+cksBin+" process list") {
				t.Errorf("banner does not show the CLI as it was run (%s):\n%s", cksBin, banner)
			}
			cmd.Process.Signal(syscall.SIGTERM)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("cks dev exit: %v\n%s", err, errb.String())
			}
			if noAgents && strings.Contains(errb.String(), "agent started") {
				t.Errorf("--no-agents started agents:\n%s", errb.String())
			}
			if !noAgents && !slices.ContainsFunc(strings.Split(errb.String(), "\n"), func(l string) bool {
				return strings.HasPrefix(l, "critic ") && strings.Contains(l, `msg="agent stopped"`)
			}) {
				t.Errorf("critic agent did not stop gracefully:\n%s", errb.String())
			}
		})
	}
}

// TestDevShutdownNeverLies, with real processes, as `cks dev 2>&1 | tee`
// is run: a process stop asked for is logged at info, not as an error;
// then the tee dies (Ctrl-C stops it too) and cks dev is interrupted while
// its exec agent holds a task past the grace period. cks dev does not die
// of the closed pipe: it shuts down, exit 0, its log going on in the data
// directory's dev.log; the exec agent, whose command ignores SIGTERM and
// outlasts the grace period, is told to interrupt it: the command is
// killed (SIGKILL after the exec agent's kill grace) and the task given
// back at once (OPEN, its attempt not counted, its lease revoked: no zombie
// can complete it), and the agent exits by itself; every agent's row reads
// exited, and `cks process list` shows so once the hub is gone, reading the
// store directly. (An agent cks dev must kill is recorded as exited and its
// leases released: TestDevStartsAgents.)
func TestDevShutdownNeverLies(t *testing.T) {
	forBackends(t, func(t *testing.T, db testDB) {
		dir := datadir.Dir(t.TempDir())
		marker := t.TempDir()
		hold := `trap "" TERM; ` + blockUntilGo // past any grace: only the kill ends it
		args := []string{"dev", "--listen", "127.0.0.1:0", "--data-dir", string(dir), "--agent-grace", "1s",
			"--exec-types", "hold", "--", "sh", "-c", hold}
		var env []string
		if db.backend != "sqlite" {
			args = append(args[:1], append([]string{"--database", db.url}, args[1:]...)...)
			env = []string{"CKS_DATABASE_URL=" + db.url} // for the process list below
		}
		cmd := exec.Command(cksBin, args...)
		cmd.Env = append(cleanEnv(), "T_DIR="+marker)
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = pw, pw
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pw.Close()
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() {
			cmd.Process.Kill()
			os.WriteFile(filepath.Join(marker, "go"), nil, 0o600)
		})
		tee := &syncBuffer{}
		go io.Copy(tee, pr) //nolint:errcheck // ends when the test closes pr
		waitFor(t, "the banner of cks dev", func() bool { return strings.Contains(tee.String(), "Press Ctrl-C") })
		url, _ := dir.ReadURL()
		tok, _ := dir.ReadToken()
		api := client.New(url, tok)

		// A stop that was asked for: info, exit status 0, no error.
		if r := runCKS(t, nil, "process", "stop", "critic", "--data-dir", string(dir)); r.code != 0 {
			t.Fatalf("process stop critic: exit %d %s", r.code, r.stderr)
		}
		waitFor(t, "cks dev to log the critic's exit", func() bool {
			return strings.Contains(tee.String(), `level=INFO msg="agent process exited as asked; not restarted" process_kind=critic`)
		})
		for _, line := range strings.Split(tee.String(), "\n") {
			if strings.Contains(line, "level=ERROR") && strings.Contains(line, "critic") {
				t.Errorf("a stop asked for logged as an error: %s", line)
			}
		}

		id := newTask(t, api, "hold", "held past the grace")
		waitState(t, api, id, cks.TaskRunning)
		shell := readPID(t, filepath.Join(marker, fmt.Sprint("pid.", id)))

		// The tee dies, then cks dev is interrupted.
		pr.Close()
		cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("cks dev with its stderr gone: %v, want exit 0\n%s", err, tee.String())
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("cks dev did not stop\n%s", tee.String())
		}
		b, _ := os.ReadFile(filepath.Join(string(dir), "dev.log"))
		log := string(b)
		for _, want := range []string{"cks dev: stderr is gone", `msg="agents did not finish their tasks in time; interrupting them`,
			agents.MsgInterrupted, `msg="agents stopped"`, `msg="hub shutting down"`} {
			if !strings.Contains(log, want) {
				t.Errorf("dev.log lacks %q:\n%s", want, log)
			}
		}
		if strings.Contains(log, "killing them") {
			t.Errorf("cks dev killed an agent that was giving its task back:\n%s", log)
		}
		waitFor(t, "the held command to die with its agent", func() bool { return pidGone(shell) })

		var s *backend.Backend
		if db.backend == "sqlite" {
			s = openStore(t, dir)
		} else {
			s = db.open(t)
		}
		task, err := s.Tasks.GetTask(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if ev := task.Events[len(task.Events)-1]; task.State != cks.TaskOpen || task.ClaimedBy != "" || task.Attempts != 0 ||
			!strings.HasPrefix(ev.Reason, worker.ReasonShutdown) {
			t.Fatalf("the interrupted agent's task: %s, claimed by %q, %d attempts, last event %+v; want it OPEN at once, "+
				"its lease revoked, its attempt given back", task.State, task.ClaimedBy, task.Attempts, ev)
		}
		rows, err := s.Liveness.ListAgentLiveness(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 5 {
			t.Fatalf("%d liveness rows, want the five agents'", len(rows))
		}
		for _, r := range rows {
			if r.ExitedAt.IsZero() {
				t.Errorf("%s row after cks dev exited: heartbeat %s, no exit; want exited", r.ProcessKind, r.LastHeartbeatAt)
			}
		}
		r := runCKS(t, env, "process", "list", "--data-dir", string(dir))
		if r.code != 0 || strings.Count(r.stdout, " exited ") != 5 || !strings.Contains(r.stderr, "directly") {
			t.Fatalf("process list after cks dev exited: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
}

// TestRestartWait: a crashed agent of cks dev waits 1 s before its
// restart, doubling with each crash in a row, at most 30 s.
func TestRestartWait(t *testing.T) {
	for crashes, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second,
		5: 16 * time.Second, 6: 30 * time.Second, 100: 30 * time.Second} {
		if got := restartWait(crashes); got != want {
			t.Errorf("restartWait(%d) = %s, want %s", crashes, got, want)
		}
	}
}
