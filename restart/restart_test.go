package restart

import (
	"errors"
	"testing"
	"time"
)

func TestFixedDelayAllowsExactlyItsAttempts(t *testing.T) {
	f := NewFixedDelay(3, 250*time.Millisecond)
	now := time.Unix(0, 0)
	for i := 1; i <= 3; i++ {
		f.NotifyFailure(errors.New("boom"), now)
		if !f.CanRestart() {
			t.Fatalf("failure %d: cannot restart, want restart", i)
		}
		if f.Backoff() != 250*time.Millisecond {
			t.Fatalf("backoff %s", f.Backoff())
		}
		if st := f.Status(); st.Attempts != i || st.MaxAttempts != 3 || st.GaveUp {
			t.Fatalf("failure %d: status %+v", i, st)
		}
	}
	f.NotifyFailure(errors.New("boom"), now)
	if f.CanRestart() {
		t.Fatal("fourth failure may restart, want give up")
	}
	if st := f.Status(); !st.GaveUp || st.GaveUpReason == "" || st.Attempts != 3 {
		t.Fatalf("status after giving up: %+v", st)
	}
}

func TestNoneNeverRestarts(t *testing.T) {
	n := &None{}
	if st := n.Status(); st.GaveUp {
		t.Fatal("gave up before any failure")
	}
	n.NotifyFailure(errors.New("boom"), time.Now())
	if n.CanRestart() || !n.Status().GaveUp {
		t.Fatal("none restarted")
	}
}
