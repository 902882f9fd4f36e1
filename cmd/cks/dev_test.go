package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/backend"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/liveness"
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
// agent works a task, a child that dies is logged and not restarted, and
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

		// No supervision: a child that dies is logged, not restarted.
		syscall.Kill(pids["pipeline"], syscall.SIGKILL)
		waitFor(t, "cks dev to log the dead pipeline agent", func() bool {
			return strings.Contains(h.stderr.String(), "agent process exited unexpectedly") &&
				strings.Contains(h.stderr.String(), "process_kind=pipeline")
		})

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
		if len(rows) != len(kinds) {
			t.Fatalf("%d liveness rows, want one per agent (none restarted): %+v", len(rows), rows)
		}
		for _, r := range rows {
			graceful := !r.ExitedAt.IsZero()
			if r.ProcessKind == "pipeline" && graceful {
				t.Errorf("the killed pipeline agent wrote a graceful-exit heartbeat")
			}
			if r.ProcessKind != "pipeline" && (!graceful || liveness.StatusAt(r, time.Now()) != cks.ProcessStopped) {
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
// with --no-agents there are none.
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
			if noAgents && !strings.Contains(banner, "none (--no-agents)") {
				t.Errorf("banner with --no-agents:\n%s", banner)
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
