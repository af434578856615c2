//go:build flink && linux

package flinklane

import "syscall"

// procAttr puts a child in a process group of its own, so that a kill
// reaches every process it started, and kills it (SIGKILL) when the thread
// that started it ends, so that a test killed by its timeout leaves no JVM
// behind.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
