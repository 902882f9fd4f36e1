package main

import "syscall"

// devSysProcAttr puts an agent of `cks dev` in its own process group and has
// the kernel send it SIGTERM should cks dev die without stopping it.
func devSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
