package tui

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/internal/fixture"
)

// lockedBuffer is an io.Writer the program writes and the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// startRun runs Run in the background on a pipe and returns the pipe's
// writing end and Run's result.
func startRun(t *testing.T, ctx context.Context, ctrl *fakeController, events <-chan view.Stamped) (io.WriteCloser, <-chan error) {
	t.Helper()
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	errc := make(chan error, 1)
	go func() {
		errc <- Run(ctx, ctrl, events, Options{Input: pr, Output: &lockedBuffer{}, TickPeriod: 5 * time.Millisecond})
	}()
	return pw, errc
}

// waitSampled waits until the UI has sampled the job n times: it is up and
// its tick runs.
func waitSampled(t *testing.T, ctrl *fakeController, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctrl.mu.Lock()
		got := ctrl.snapshots
		ctrl.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the UI sampled the job %d times, want %d", got, n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func waitResult(t *testing.T, errc <-chan error) {
	t.Helper()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Run returned %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
}

func TestRunReturnsWhenContextIsDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctrl := newFake(fixture.Running())
	_, errc := startRun(t, ctx, ctrl, make(chan view.Stamped))
	waitSampled(t, ctrl, 2)
	cancel()
	waitResult(t, errc)
}

func TestRunReturnsWhenTheUserQuits(t *testing.T) {
	for _, key := range []string{"q", "\x03"} { // q, ctrl+c
		ctrl := newFake(fixture.Running())
		in, errc := startRun(t, context.Background(), ctrl, nil)
		waitSampled(t, ctrl, 2)
		if _, err := in.Write([]byte(key)); err != nil {
			t.Fatal(err)
		}
		waitResult(t, errc)
		if calls := ctrl.Calls(); len(calls) != 0 {
			t.Fatalf("quitting sent commands: %q", calls)
		}
	}
}

func TestRunGoesOnAfterTheEventsEnd(t *testing.T) {
	events := make(chan view.Stamped, 2)
	events <- view.Stamped{Event: view.JobStatus{Status: "FINISHED"}}
	close(events)
	ctrl := newFake(fixture.Running())
	in, errc := startRun(t, context.Background(), ctrl, events)
	// The tick goes on sampling the job after the stream closed: the UI
	// still shows the final state, and nothing crashed.
	waitSampled(t, ctrl, 10)
	select {
	case err := <-errc:
		t.Fatalf("Run returned %v before the user quit", err)
	default:
	}
	if _, err := in.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	waitResult(t, errc)
}
