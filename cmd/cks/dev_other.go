//go:build !linux

package main

import "syscall"

// devSysProcAttr puts an agent of `cks dev` in its own process group.
func devSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
