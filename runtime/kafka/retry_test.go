package kafka

import (
	"testing"
	"time"
)

// The backoff doubles from 100 ms to 1 s, and jitter keeps it within 20 %.
func TestRetryBackoff(t *testing.T) {
	p := DefaultRetryPolicy()
	p.Jitter = func(d time.Duration) time.Duration { return d }
	var got []time.Duration
	for try := 1; try <= 7; try++ {
		got = append(got, p.wait(try))
	}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000, 1000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("backoffs %v, want %v ms", got, want)
		}
	}
	for i := 0; i < 1000; i++ {
		if d := jitter20(500 * time.Millisecond); d < 400*time.Millisecond || d > 600*time.Millisecond {
			t.Fatalf("jitter of 500 ms gave %s", d)
		}
	}
}
