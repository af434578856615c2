package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// TreeRSS is the resident set size of process pid and its descendants,
// summed (faultline is a supervisor and the child that does the work; a
// JVM is one process): what a test or a benchmark holds a run's memory to.
func TreeRSS(pid int) int64 {
	total := processRSS(pid)
	// A child is listed under the thread that started it.
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, file := range files {
		kids, _ := os.ReadFile(file)
		for _, f := range strings.Fields(string(kids)) {
			var c int
			fmt.Sscan(f, &c)
			total += TreeRSS(c)
		}
	}
	return total
}

// processRSS is the resident set size of process pid alone.
func processRSS(pid int) int64 { return statusBytes(fmt.Sprint(pid), "VmRSS:") }

// ResetPeakRSS sets this process's peak RSS (VmHWM) to its RSS now, so
// that PeakRSS tells the peak of what follows (Linux's clear_refs).
func ResetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// PeakRSS is this process's peak RSS since it started or since
// ResetPeakRSS, 0 when it cannot be read.
func PeakRSS() int64 { return statusBytes("self", "VmHWM:") }

// statusBytes is the field of /proc/<proc>/status given in kB, in bytes
// (0 when it cannot be read).
func statusBytes(proc, field string) int64 {
	b, err := os.ReadFile("/proc/" + proc + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			var kb int64
			fmt.Sscan(rest, &kb)
			return kb << 10
		}
	}
	return 0
}

// DiskUsage is the disk space the files under dir use: their blocks, as
// du counts them (Badger's preallocated files are sparse).
func DiskUsage(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok {
					n += st.Blocks * 512
				}
			}
		}
		return nil
	})
	return n
}
