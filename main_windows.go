//go:build windows

// faultline does not build for Windows: its state dir's lock, its disk
// checks and the supervision of its process are Unix's. This file stands
// in for main.go there, so that the build stops with one line that says so
// rather than with the errors of the packages that need Unix.
package main

const _ = "faultline does not build for Windows: it needs Linux or macOS; on Windows, run it in WSL 2" + 0
