//go:build !linux

package agents

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// RunExecGuard does nothing here: the exec guard (a subreaper that outlives
// the agent) exists on Linux only; elsewhere the agent runs the command
// itself.
func RunExecGuard() {}

// runCommand runs the command in a process group of its own as a child of
// the agent. Without a subreaper the agent can only signal the group: a
// child that left it, or the group of an agent killed with SIGKILL, is not
// cleaned up here.
func runCommand(ctx context.Context, cfg ExecConfig, run commandRun) (commandEnd, error) {
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.Env = bytes.NewReader(run.stdin), run.stdout, run.stderr, run.env
	if run.reports != nil {
		cmd.ExtraFiles = []*os.File{run.reports} // fd 3 (CKS_REPORT_FD)
	}
	// Output held open by a straggler of the group must not hold Wait.
	cmd.WaitDelay = cfg.KillGrace
	if err := cmd.Start(); err != nil {
		return commandEnd{}, startError(cfg, err.Error())
	}
	pgid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		killGroup(pgid, syscall.SIGKILL) // stragglers of a finished command
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			return commandEnd{status: ee.String()}, nil
		}
		if err != nil {
			return commandEnd{status: err.Error()}, nil
		}
		return commandEnd{}, nil
	case <-ctx.Done():
		killGroup(pgid, syscall.SIGTERM)
		grace := time.NewTimer(cfg.KillGrace)
		select {
		case <-done:
			grace.Stop()
		case <-grace.C:
			killGroup(pgid, syscall.SIGKILL)
			<-done
		}
		killGroup(pgid, syscall.SIGKILL)
		return commandEnd{killed: true}, nil
	}
}
