package agents

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The exec guard. An exec agent does not run its command itself: it starts
// this program again as a guard (argv[1] execGuardArg, environment
// execGuardEnv=1), and the guard runs the command. The guard is what makes
// the command's end definite:
//
//   - it is a child subreaper (PR_SET_CHILD_SUBREAPER), so every process the
//     command starts that loses its parent — in the command's process group
//     or not (setsid, double fork) — becomes the guard's child: the guard
//     can see it, kill it and reap it, instead of init;
//   - it exits only once it has no children left, alive or zombie, so the
//     agent, which waits for the guard, knows that nothing of the command is
//     left when it confirms an abort or completes the task;
//   - it outlives the agent: it holds the read end of a pipe whose only
//     writer is the agent, and the kernel closes that when the agent dies,
//     however it dies; at that EOF the guard kills everything at once;
//   - it starts the command with Pdeathsig=SIGKILL, so the command dies
//     even if the guard itself is killed.
//
// Protocol, on the guard's extra descriptors: fd 3 is the control pipe (the
// agent writes one byte to ask for termination: SIGTERM to the command's
// group, SIGKILL to all after the grace period; EOF means the agent is
// gone); fd 4 is the report pipe, where the guard writes how the command
// ended, one line: "exit N", "signal N" or "start REASON".
const (
	execGuardArg = "cks-exec-guard"
	execGuardEnv = "CKS_EXEC_GUARD"
	// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER of prctl(2).
	prSetChildSubreaper = 36
	// guardPoll re-examines the children while the guard kills them, as a
	// backstop to SIGCHLD.
	guardPoll = 100 * time.Millisecond
)

// RunExecGuard makes this process an exec guard when an exec agent started
// it as one, and exits when the guard's work is done; in any other process
// it returns at once. A program that uses Exec calls it first thing in main
// (cks does, and so does TestMain of the tests that use Exec), because Exec
// starts the guard by running the program itself again.
func RunExecGuard() {
	if len(os.Args) < 2 || os.Args[1] != execGuardArg || os.Getenv(execGuardEnv) == "" {
		return
	}
	os.Exit(execGuard(os.Args[2:]))
}

// runCommand runs the command under an exec guard and returns once the guard
// has exited, that is once no process of the command is left.
func runCommand(ctx context.Context, cfg ExecConfig, run commandRun) (commandEnd, error) {
	if os.Getenv(execGuardEnv) != "" {
		// A process started as a guard whose main did not call RunExecGuard:
		// starting a guard from here would recurse.
		return commandEnd{}, errors.New("exec agent: this process was started as an exec guard but its main does not call agents.RunExecGuard")
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return commandEnd{}, fmt.Errorf("exec agent: %w", err)
	}
	defer ctlW.Close()
	repR, repW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		return commandEnd{}, fmt.Errorf("exec agent: %w", err)
	}
	defer repR.Close()
	// /proc/self/exe is this very binary even if its file was replaced since.
	guard := exec.Command("/proc/self/exe", append([]string{execGuardArg, cfg.KillGrace.String(), "--"}, cfg.Command...)...)
	guard.Args[0] = os.Args[0]
	guard.Env = append(run.env, execGuardEnv+"=1")
	guard.Stdin, guard.Stdout, guard.Stderr = bytes.NewReader(run.stdin), run.stdout, run.stderr
	guard.ExtraFiles = []*os.File{ctlR, repW}
	if run.reports != nil {
		guard.ExtraFiles = append(guard.ExtraFiles, run.reports) // fd 5, the command's fd 3
	}
	// A group of its own: a Ctrl-C at the agent's terminal reaches the agent
	// (which drains), not the guard.
	guard.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Output held open by something outside the guard's reach must not hold
	// Wait forever.
	guard.WaitDelay = cfg.KillGrace
	err = guard.Start()
	ctlR.Close()
	repW.Close()
	if err != nil {
		return commandEnd{}, fmt.Errorf("exec agent: start the exec guard: %w", err)
	}
	report := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(repR) // EOF when the guard exits
		report <- string(b)
	}()
	done := make(chan error, 1)
	go func() { done <- guard.Wait() }()
	var end commandEnd
	var werr error
	select {
	case werr = <-done:
	case <-ctx.Done():
		end.killed = true
		ctlW.Write([]byte{'t'}) //nolint:errcheck // a guard already gone has nothing left to kill
		werr = <-done
	}
	line := strings.TrimSpace(<-report)
	verb, arg, _ := strings.Cut(line, " ")
	n, nerr := strconv.Atoi(arg)
	switch {
	case verb == "start":
		return commandEnd{}, startError(cfg, arg)
	case verb == "exit" && nerr == nil:
		if n != 0 {
			end.status = "exit status " + arg
		}
	case verb == "signal" && nerr == nil:
		end.status = "signal: " + syscall.Signal(n).String()
	default:
		return end, fmt.Errorf("exec agent: the exec guard ended without a report (%v, %q)", werr, line)
	}
	return end, nil
}

// execGuard is the guard's main: args are the grace period, "--" and the
// command. It returns the guard's exit status, which is 0 whenever it could
// write its report.
func execGuard(args []string) int {
	if len(args) < 3 || args[1] != "--" {
		fmt.Fprintln(os.Stderr, execGuardArg+": expected GRACE -- COMMAND [ARG...]")
		return 2
	}
	grace, err := time.ParseDuration(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, execGuardArg+":", err)
		return 2
	}
	command := args[2:]
	ctl, rep := os.NewFile(3, "control"), os.NewFile(4, "report")
	// Neither pipe is the command's business.
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	// The agent's reports pipe (CKS_REPORT_FD), when it passed one, is the
	// command's fd 3: os.StartProcess passes on Files only.
	files := []*os.File{os.Stdin, os.Stdout, os.Stderr}
	if os.Getenv(reportFDEnv) != "" {
		files = append(files, os.NewFile(5, "reports"))
	}
	say := func(format string, a ...any) int {
		if _, err := fmt.Fprintf(rep, format+"\n", a...); err != nil {
			return 1
		}
		return 0
	}
	// Pdeathsig fires when the thread that forked the child exits, not the
	// process, and Go may end a thread while the process lives on. This
	// goroutine forks the command and stays locked to its thread for the
	// guard's whole life (it never unlocks; the guard ends with os.Exit from
	// it), so the command's SIGKILL comes exactly when the guard dies.
	runtime.LockOSThread()
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		return say("start cannot become a child subreaper: %v", e)
	}
	// The guard takes orders from its agent only. A SIGTERM aimed at a whole
	// tree of processes (systemd stopping a service) reaches the command
	// directly; the guard stays to clean up after it. Caught, not ignored,
	// so that the command starts with the default dispositions.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	os.Unsetenv(execGuardEnv) // a command may be an exec agent itself
	path, err := exec.LookPath(command[0])
	if err != nil {
		return say("start %v", err)
	}
	proc, err := os.StartProcess(path, command, &os.ProcAttr{Files: files,
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}})
	if err != nil {
		return say("start %v", err)
	}
	leader := proc.Pid // and the group's id

	term, agentGone := make(chan struct{}, 1), make(chan struct{})
	go func() {
		b := make([]byte, 1)
		for {
			n, err := ctl.Read(b)
			if n > 0 {
				select {
				case term <- struct{}{}:
				default:
				}
			}
			if err != nil {
				close(agentGone)
				return
			}
		}
	}()

	// Only this goroutine reaps, so a child listed or signalled below is
	// never a reused pid; and while the leader is not reaped its pid, the
	// group's id, cannot be reused either, so the group may be signalled.
	var status *syscall.WaitStatus
	reap := func() (noChildren bool) {
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			switch {
			case errors.Is(err, syscall.EINTR):
				continue
			case errors.Is(err, syscall.ECHILD):
				return true
			case err != nil || pid <= 0:
				return false
			case pid == leader:
				status = &ws
			}
		}
	}

	// Until the command exits, the agent asks for its end, or the agent dies;
	// after a request, until all it started has exited or the grace period
	// is over. Orphans the command leaves are reaped as they exit.
	var graceOver <-chan time.Time
	for hard := false; !hard; {
		if none := reap(); status != nil && (graceOver == nil || none) {
			break
		}
		select {
		case <-chld:
		case <-term:
			if graceOver == nil && status == nil {
				killGroup(leader, syscall.SIGTERM)
				graceOver = time.After(grace)
			}
		case <-graceOver:
			hard = true
		case <-agentGone:
			hard = true
		}
	}
	// Then nothing of it may outlive it: SIGKILL to the group while it is
	// still the leader's, and to every child, until there are none. A child
	// killed hands its own children to the guard, which kills them in turn.
	for {
		if status == nil {
			killGroup(leader, syscall.SIGKILL)
		}
		for _, pid := range childrenOf(os.Getpid()) {
			syscall.Kill(pid, syscall.SIGKILL) //nolint:errcheck // a zombie already
		}
		if reap() {
			break
		}
		select {
		case <-chld:
		case <-time.After(guardPoll):
		}
	}
	switch {
	case status == nil: // cannot be: only this goroutine reaps
		return say("start lost the command's exit status")
	case status.Signaled():
		return say("signal %d", int(status.Signal()))
	}
	return say("exit %d", status.ExitStatus())
}

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(pid int) []int {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range dir {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := os.Open("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		line, _ := bufio.NewReader(f).ReadString('\n')
		f.Close()
		// "pid (comm) state ppid ...": comm may hold anything but the last ')'.
		if i := strings.LastIndexByte(line, ')'); i >= 0 {
			if f := strings.Fields(line[i+1:]); len(f) > 1 && f[1] == strconv.Itoa(pid) {
				out = append(out, child)
			}
		}
	}
	return out
}
