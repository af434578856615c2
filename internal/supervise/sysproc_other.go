//go:build !linux

package supervise

import "syscall"

// sysProcAttr is empty where the kernel has no parent-death signal: the
// child's lifeline pipe does that work alone.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
