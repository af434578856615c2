package main

import (
	"strings"
	"testing"
)

const events = `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:9: looked fine\n"}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":1.5}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:7: it broke\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"--- FAIL: TestB (3.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestB","Elapsed":3}
{"Action":"output","Package":"p","Output":"FAIL\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t4.6s\n"}
{"Action":"fail","Package":"p","Elapsed":4.6}
`

// A failing test's output is shown, a passing one's is not, the slowest
// tests come last, and a failure fails the report.
func TestReportShowsFailuresAndTheSlowest(t *testing.T) {
	var out strings.Builder
	code := run(strings.NewReader(events), &out, 10)
	got := out.String()
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{"b_test.go:7: it broke", "FAIL\tp\t4.6s", "the 2 slowest tests:\n      3.0s  p.TestB\n      1.5s  p.TestA\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "looked fine") {
		t.Errorf("a passing test's output is shown:\n%s", got)
	}
	passing := strings.ReplaceAll(strings.ReplaceAll(events, `"fail"`, `"pass"`), "FAIL", "ok")
	if code := run(strings.NewReader(passing), &out, 10); code != 0 {
		t.Errorf("all passed: exit %d", code)
	}
	if code := run(strings.NewReader(""), &out, 10); code != 1 {
		t.Errorf("no verdict at all: exit %d, want 1", code)
	}
}

// A test binary that runs out of its -timeout panics while tests run: they
// get no verdict of their own, and what they printed (the panic, the
// goroutines) is shown with the package's.
func TestReportShowsTestsCutShort(t *testing.T) {
	const timedOut = `{"Action":"run","Package":"q","Test":"TestHangs"}
{"Action":"output","Package":"q","Test":"TestHangs","Output":"=== RUN   TestHangs\n"}
{"Action":"output","Package":"q","Test":"TestHangs","Output":"panic: test timed out after 10m0s\n"}
{"Action":"output","Package":"q","Test":"TestHangs","Output":"goroutine 7 [select]:\n"}
{"Action":"output","Package":"q","Output":"FAIL\tq\t600.1s\n"}
{"Action":"fail","Package":"q","Elapsed":600.1}
`
	var out strings.Builder
	if code := run(strings.NewReader(timedOut), &out, 10); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{"--- cut short: q TestHangs", "panic: test timed out after 10m0s", "goroutine 7 [select]:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}
