package kafkalane

import "syscall"

// procAttr makes a Java process die with the test binary (SIGKILL when the
// thread that started it ends), so that a test killed by its timeout
// leaves no broker behind.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
