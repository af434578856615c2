// Command testreport reads `go test -json` on standard input, prints what
// go test would print, and then the ten slowest tests; it exits 1 when a
// test or a package failed (or the input ended without a verdict), so that
// `make test` fails as go test would.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

type result struct {
	name    string
	elapsed time.Duration
	action  string
}

func main() {
	os.Exit(run(os.Stdin, os.Stdout, 10))
}

// run copies the output of the events on in to out, then lists the n
// slowest tests, and returns the exit code.
func run(in io.Reader, out io.Writer, n int) int {
	var tests []result
	failed, verdicts := false, 0
	// Each running test's output, until it passes (dropped) or fails
	// (printed).
	pending := map[string]string{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(out, sc.Text()) // not an event: go vet, build errors
			continue
		}
		switch e.Action {
		case "build-output":
			fmt.Fprint(out, e.Output)
		case "output":
			// Test lines are shown for failures only, as go test does
			// without -v; package lines (ok, FAIL, build errors) always.
			if e.Test == "" {
				if e.Output != "PASS\n" { // go test prints it with -v only
					fmt.Fprint(out, e.Output)
				}
			} else {
				pending[key(e)] += e.Output
			}
		case "pass", "fail", "skip":
			if e.Test == "" {
				verdicts++
				failed = failed || e.Action == "fail"
				cutShort(out, pending, e.Package)
				continue
			}
			if e.Action == "fail" {
				failed = true
				fmt.Fprint(out, pending[key(e)])
			}
			delete(pending, key(e))
			if !strings.Contains(e.Test, "/") {
				tests = append(tests, result{e.Package + "." + e.Test, time.Duration(e.Elapsed * float64(time.Second)), e.Action})
			}
		}
	}
	sort.Slice(tests, func(i, j int) bool { return tests[i].elapsed > tests[j].elapsed })
	if len(tests) > 0 {
		fmt.Fprintf(out, "\nthe %d slowest tests:\n", min(n, len(tests)))
		for _, t := range tests[:min(n, len(tests))] {
			fmt.Fprintf(out, "  %7.1fs  %s\n", t.elapsed.Seconds(), t.name)
		}
	}
	if failed || verdicts == 0 {
		return 1
	}
	return 0
}

func key(e event) string { return e.Package + " " + e.Test }

// cutShort prints the output of pkg's tests that never ended, and forgets
// it: a test binary that panicked or ran out of its -timeout ends with
// its package's verdict while its tests are still running, and what they
// printed (the panic and every goroutine's stack among it) is how to tell
// why.
func cutShort(out io.Writer, pending map[string]string, pkg string) {
	var keys []string
	for k := range pending {
		if strings.HasPrefix(k, pkg+" ") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(out, "--- cut short: %s\n%s", k, pending[k])
		delete(pending, k)
	}
}
