package supervise

import "syscall"

// sysProcAttr makes the kernel kill the child when the supervisor dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
