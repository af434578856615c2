package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
func processRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			fmt.Sscan(rest, &kb)
			return kb << 10
		}
	}
	return 0
}
