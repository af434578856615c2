//go:build !linux

package kafkalane

import "syscall"

// procAttr is nothing special outside Linux.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
