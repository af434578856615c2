package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/spec"
	"github.com/faultline-dev/faultline/tui"
)

// openPTY opens a pseudo-terminal of width×height: the terminal side the UI
// draws on, and the other side, whose reader stands in for the screen.
func openPTY(width, height int) (term, screen *os.File, err error) {
	screen, err = os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		return nil, nil, err
	}
	fd := int(screen.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		screen.Close()
		return nil, nil, fmt.Errorf("unlock pty: %w", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		screen.Close()
		return nil, nil, fmt.Errorf("pty number: %w", err)
	}
	term, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		screen.Close()
		return nil, nil, err
	}
	ws := &unix.Winsize{Row: uint16(height), Col: uint16(width)}
	if err := unix.IoctlSetWinsize(int(term.Fd()), unix.TIOCSWINSZ, ws); err != nil {
		term.Close()
		screen.Close()
		return nil, nil, fmt.Errorf("pty size: %w", err)
	}
	return term, screen, nil
}

// benchJob is the default job over a bounded in-memory input, ready to run.
func benchJob(b *testing.B, records int64) (*runtime.Job, *spec.Job) {
	b.Helper()
	return memoryJob(b, orders.NewGenerator(1, records, orders.GeneratorPartitions), time.Second)
}

// memoryJob is the default job over gen's input, its output in memory,
// checkpointed every interval, ready to run.
func memoryJob(tb testing.TB, gen *orders.Generator, interval time.Duration) (*runtime.Job, *spec.Job) {
	tb.Helper()
	env := &runtime.Env{Sources: map[string]runtime.Source{}, Outputs: map[string]runtime.TxnOutput{"revenue": runtime.NewMemoryOutput()}}
	for _, topic := range []string{orders.TopicOrders, orders.TopicPayments} {
		s, err := gen.Source(topic)
		if err != nil {
			tb.Fatal(err)
		}
		env.Sources[topic] = s
	}
	sp := orders.Default()
	j, err := runtime.New(runtime.Config{Job: sp, Env: env, Types: orders.Types{}, Checkpoint: checkpoint.Config{Interval: interval},
		Observer: runtime.NewObserver(nil, 8192)})
	if err != nil {
		tb.Fatal(err)
	}
	return j, sp
}

// headlessRun runs the job with its events read and dropped, as a headless
// run that nobody reads would.
func headlessRun(b *testing.B, records int64) float64 {
	j, _ := benchJob(b, records)
	go func() {
		for range j.Observer().Events() {
		}
	}()
	res, err := j.Run(context.Background(), runtime.RunOptions{})
	j.Observer().Close()
	if err != nil || res.Status != runtime.JobFinished {
		b.Fatalf("headless run: %v %v", res, err)
	}
	return float64(res.RecordsIn) / res.Elapsed.Seconds()
}

// uiRun runs the same job with the terminal UI drawing it on a
// pseudo-terminal at 120×40 (sampling every 200 ms, reading every event),
// and quits the UI once the job has finished.
func uiRun(b *testing.B, records int64) float64 {
	term, screen, err := openPTY(120, 40)
	if err != nil {
		b.Fatal(err)
	}
	defer screen.Close()
	defer term.Close()
	go io.Copy(io.Discard, screen) // the screen: everything drawn is read
	j, sp := benchJob(b, records)
	ctrl := newUIController(j, sp, tui.JobInfo{Name: sp.Name, Title: jobTitle(sp), Interval: time.Second}, nil, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	uiDone := make(chan error, 1)
	go func() { uiDone <- tui.Run(ctx, ctrl, j.Observer().Events(), tui.Options{Input: term, Output: term}) }()
	res, err := j.Run(context.Background(), runtime.RunOptions{})
	cancel()
	if uerr := <-uiDone; uerr != nil {
		b.Fatalf("UI: %v", uerr)
	}
	j.Observer().Close()
	if err != nil || res.Status != runtime.JobFinished {
		b.Fatalf("run with the UI: %v %v", res, err)
	}
	return float64(res.RecordsIn) / res.Elapsed.Seconds()
}

// BenchmarkUIOverhead runs the default job over the same bounded input
// headless and with the terminal UI rendering it on a pseudo-terminal,
// alternating, and reports both rates and their ratio (goal: ≥ 0.95).
func BenchmarkUIOverhead(b *testing.B) {
	// The UI asks the terminal for its colours at start unless TERM says
	// it cannot answer; nobody answers on this pty.
	b.Setenv("TERM", "screen")
	const records = 3_000_000
	var headless, withUI float64
	for i := 0; i < b.N; i++ {
		headless += headlessRun(b, records)
		withUI += uiRun(b, records)
	}
	headless /= float64(b.N)
	withUI /= float64(b.N)
	b.ReportMetric(headless, "rec/s-headless")
	b.ReportMetric(withUI, "rec/s-with-ui")
	b.ReportMetric(withUI/headless, "ratio")
	b.ReportMetric(0, "ns/op")
}
