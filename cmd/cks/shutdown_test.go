package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/cmd/cks/internal/shutdown"
	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/runtime/worker"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestAgentEarlySIGTERM (issue 38 item 9): a SIGTERM sent as soon as an
// agent process can take one — on the line it writes the moment its signals
// are caught, in its package initialisation, long before main and the
// ~150 ms of the other packages' inits — drains it: exit status 0, a log
// line saying it stopped, never the signal's default death (status 143) or
// the "context canceled" of a store opened under an ended context (exit 1).
func TestAgentEarlySIGTERM(t *testing.T) {
	for round := range 3 {
		dir := t.TempDir()
		cmd := exec.Command(cksBin, "agent", "exec", "--data-dir", filepath.Join(dir, datadir.Default), "--types", "early", "--create",
			"--", "true")
		cmd.Env = append(cleanEnv(), shutdown.EnvTestReady+"=1")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		lines := make(chan string, 64)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		var log []string
		select {
		case l, ok := <-lines:
			if !ok || l != shutdown.ReadyLine {
				t.Fatalf("round %d: the agent's first line is %q (open %v), want %q: its signals are not caught first", round, l, ok, shutdown.ReadyLine)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: the agent never said its signals are caught", round)
		}
		cmd.Process.Signal(syscall.SIGTERM)
		for l := range lines {
			log = append(log, l)
		}
		err = cmd.Wait()
		all := strings.Join(log, "\n")
		if err != nil {
			t.Fatalf("round %d: an agent sent SIGTERM as it started: %v, want exit status 0\n%s", round, err, all)
		}
		if !strings.Contains(all, agents.MsgStoppedBeforeStart) && !strings.Contains(all, agents.MsgDraining) {
			t.Fatalf("round %d: no drain in the log of an agent stopped as it started:\n%s", round, all)
		}
	}
}

// blockForever is an exec agent command that records its pid and then runs
// until it is killed (the exec guard's SIGTERM ends it).
const blockForever = `echo $$ > "$T_DIR/pid.$T_ROUND"
while :; do sleep 0.02; done`

// TestAgentShutdownGivesBack (issue 39 item 7): an agent stopped while its
// task cannot finish gives the task back without counting the attempt —
// OPEN, attempts unchanged, "released by shutdown" in its history, its
// command gone — whether its drain timeout runs out or a second SIGTERM
// hurries it, so three restarts in a row never dead-letter a task of
// max_attempts 3. A crash (SIGKILL) still counts the attempt: the next
// claim takes the task back once its lease ran out, as attempt 2.
func TestAgentShutdownGivesBack(t *testing.T) {
	forBackends(t, func(t *testing.T, db testDB) {
		st := db.open(t)
		ctx := context.Background()
		task, _, err := st.Tasks.Enqueue(ctx, cks.NewTask{Type: "long", Title: "longer than any drain", MaxAttempts: 3})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		start := func(round, drain string) (*agentProc, int) {
			t.Helper()
			a := startAgent(t, []string{"T_DIR=" + dir, "T_ROUND=" + round, "CKS_EXEC_HEARTBEAT_INTERVAL=0.4"},
				append([]string{"exec", "--database", db.url, "--types", "long", "--drain-timeout", drain},
					append(fastAgent, "--", "sh", "-c", blockForever)...)...)
			return a, readPID(t, filepath.Join(dir, "pid."+round))
		}
		givenBack := func(round string, a *agentProc, pid int, logged string) {
			t.Helper()
			if code := a.wait(t); code != 0 {
				t.Fatalf("round %s: agent exit status %d, want 0\n%s", round, code, a.stderr.String())
			}
			if !strings.Contains(a.stderr.String(), logged) {
				t.Errorf("round %s: the agent's log lacks %q:\n%s", round, logged, a.stderr.String())
			}
			if !pidGone(pid) {
				t.Errorf("round %s: the command (pid %d) outlived its agent", round, pid)
			}
			got, err := st.Tasks.GetTask(ctx, task.ID)
			if err != nil {
				t.Fatal(err)
			}
			last := got.Events[len(got.Events)-1]
			if got.State != cks.TaskOpen || got.Attempts != 0 || got.ClaimedBy != "" ||
				!strings.HasPrefix(last.Reason, worker.ReasonShutdown+": ") || last.To != cks.TaskOpen {
				t.Fatalf("round %s: task %s, %d attempts, claimed by %q, last event %+v; want OPEN, attempts unchanged (0), "+
					"%q in its history", round, got.State, got.Attempts, got.ClaimedBy, last, worker.ReasonShutdown)
			}
		}
		for _, round := range []string{"1", "2"} {
			a, pid := start(round, "0.3")
			a.cmd.Process.Signal(syscall.SIGTERM)
			givenBack(round, a, pid, agents.MsgDrainTimeout)
		}
		// Without a drain timeout, the second signal hurries the drain.
		a, pid := start("3", "0")
		a.cmd.Process.Signal(syscall.SIGTERM)
		a.waitLog(t, agents.MsgDraining)
		if a.exited() || pidGone(pid) {
			t.Fatalf("round 3: the agent gave up its task without a second signal or a drain timeout\n%s", a.stderr.String())
		}
		a.cmd.Process.Signal(syscall.SIGTERM)
		givenBack("3", a, pid, agents.MsgInterrupted)

		// A crash counts: the lease runs out, and the next claim takes it
		// back as attempt 2.
		a, pid = start("4", "0")
		a.cmd.Process.Signal(syscall.SIGKILL)
		a.wait(t)
		waitFor(t, "the killed agent's command to die", func() bool { return pidGone(pid) })
		var again []cks.ClaimedTask
		waitFor(t, "the killed agent's lease to run out and a claim to take the task", func() bool {
			again, err = st.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "test", Types: []string{"long"}, N: 1, Lease: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			return len(again) == 1
		})
		if again[0].Attempts != 2 {
			t.Fatalf("after a crash the next claim is attempt %d, want 2 (the crashed attempt counted)", again[0].Attempts)
		}
	})
}

// TestDevRestartsGiveBack (issue 39 item 7, as it was found): restarting
// `cks dev` three times while its exec agent runs a long task — Ctrl-C,
// its agents asked to drain, the task outlasting --agent-grace — gives the
// task back each time: OPEN with its attempts unchanged, never FAILED "max
// attempts", and the fourth start claims it again.
func TestDevRestartsGiveBack(t *testing.T) {
	dir := datadir.Dir(t.TempDir())
	marker := t.TempDir()
	var id int64
	for round := 1; round <= 3; round++ {
		cmd := exec.Command(cksBin, "dev", "--listen", "127.0.0.1:0", "--data-dir", string(dir), "--agent-grace", "0.2",
			"--exec-types", "long", "--", "sh", "-c", blockForever)
		cmd.Env = append(cleanEnv(), "T_DIR="+marker, fmt.Sprint("T_ROUND=", round))
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() { cmd.Process.Kill() })
		waitFor(t, "the banner of cks dev", func() bool { return strings.Contains(out.String(), "Press Ctrl-C") })
		if round == 1 {
			url, _ := dir.ReadURL()
			tok, _ := dir.ReadToken()
			id = newTask(t, client.New(url, tok), "long", "runs across restarts")
		}
		pid := readPID(t, filepath.Join(marker, fmt.Sprint("pid.", round)))
		cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("round %d: cks dev: %v, want exit 0\n%s", round, err, out.String())
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("round %d: cks dev did not stop\n%s", round, out.String())
		}
		if !strings.Contains(out.String(), "interrupting them") || strings.Contains(out.String(), "killing them") {
			t.Errorf("round %d: cks dev did not have its agents give their tasks back:\n%s", round, out.String())
		}
		waitFor(t, "the command to end with its agent", func() bool { return pidGone(pid) })
		got := taskIn(t, dir, id)
		if got.State != cks.TaskOpen || got.Attempts != 0 {
			t.Fatalf("round %d: task %s with %d attempts (last error %q); want OPEN with attempts unchanged", round, got.State,
				got.Attempts, got.LastError)
		}
	}
}

// taskIn reads task id from the data directory's database.
func taskIn(t *testing.T, dir datadir.Dir, id int64) cks.Task {
	t.Helper()
	s, err := backend.Open(context.Background(), dir.DatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	task, err := s.Tasks.GetTask(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return task
}
