//go:build flink && !linux

package flinklane

import "syscall"

// procAttr puts a child in a process group of its own, so that a kill
// reaches every process it started.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
