package cli

import (
	"fmt"
	"strings"

	"github.com/faultline-dev/faultline/runtime/verify"
	"github.com/faultline-dev/faultline/tui"
)

// verdictCount is one count of a verdict, as the summary shows it.
type verdictCount struct {
	name  string
	n     int
	fails bool // it is why the verdict failed
	// always: shown when 0 too (the four a reader looks for first).
	always bool
}

// verdictCounts are v's counts in the order the summary shows them, each
// marked when it fails v, by the rule verify.VerifyHeld judges OK by:
// nothing lost or unexpected and, under exactly-once, no duplicate.
func verdictCounts(v verify.Verification) []verdictCount {
	dupsFail := v.Duplicates > v.DuplicatesAtLeastOnce && v.Guarantee != "at-least-once"
	return []verdictCount{
		{name: "expected", n: v.Expected, always: true},
		{name: "committed", n: v.Committed, always: true},
		{name: "duplicates", n: v.Duplicates, fails: dupsFail, always: true},
		{name: "lost", n: v.Lost, fails: v.Lost > 0, always: true},
		{name: "unexpected", n: v.Unexpected, fails: v.Unexpected > 0},
		{name: "not joined", n: v.NotJoined},
		{name: "bad input", n: v.BadInput},
		{name: "after the input's end", n: v.AfterCheckpoint},
	}
}

// verifySummary is the one line `faultline verify` prints for v, e.g.
// "verify: exactly-once ✓  expected 9,953 · committed 9,953 · duplicates
// 0 · lost 0". A count that fails the verdict is marked ✗ after it, so
// that the line says why without colour; duplicates that at-least-once
// lets pass say so.
func verifySummary(v verify.Verification) string {
	mark := "✓"
	if !v.OK {
		mark = "✗"
	}
	var parts []string
	for _, c := range verdictCounts(v) {
		if c.n == 0 && !c.always {
			continue
		}
		p := c.name + " " + tui.Thousands(int64(c.n))
		switch {
		case c.fails:
			p += " ✗"
		case c.name == "duplicates" && c.n > 0 && v.Guarantee == "at-least-once":
			p += " (allowed at least once)"
		}
		parts = append(parts, p)
	}
	return fmt.Sprintf("verify: %s %s  %s", v.Guarantee, mark, strings.Join(parts, " · "))
}

// verifyExit is the exit of a verification, as run's (DESIGN.md): nil
// when v passed, exit code 4 with the counts that failed it otherwise.
func verifyExit(v verify.Verification) error {
	if v.OK {
		return nil
	}
	var why []string
	for _, c := range verdictCounts(v) {
		if c.fails {
			name := c.name
			if c.n == 1 && name == "duplicates" {
				name = "duplicate"
			}
			why = append(why, tui.Thousands(int64(c.n))+" "+name)
		}
	}
	if len(why) == 0 {
		why = []string{"the output was not shown to be " + v.Guarantee}
	}
	ee := exitError{code: 4, err: fmt.Errorf("verification failed: %s", strings.Join(why, ", "))}
	if v.Lost > 0 {
		// The likeliest cause of all, which the counts cannot tell apart:
		// the job has not committed them yet.
		ee.then = "a job still running, or stopped and not yet resumed, may not have committed the lost records yet: verify again once it has finished"
	}
	return ee
}
