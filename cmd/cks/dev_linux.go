package main

import "syscall"

// devSysProcAttr puts an agent of `cks dev` in its own process group and has
// the kernel send it SIGTERM should cks dev die without stopping it.
//
// Pdeathsig fires when the thread that forked the child exits, not the
// process. The Go runtime ends a thread only when a goroutine locked to it
// (runtime.LockOSThread) returns without unlocking, and cks dev starts its
// agents from goroutines that never lock one, so the forking thread lives
// as long as cks dev. (The exec guard, which must not rely on that, locks
// its thread for good: internal/agents/exec_linux.go.)
func devSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
