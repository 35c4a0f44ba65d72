//go:build !linux

package realparts

import "syscall"

// procAttr has no parent-death signal outside Linux: a child outlives a
// crashed starter there, and Stop (by PID) is what ends it.
func procAttr(syscall.Signal) *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
