package runtime

import (
	"testing"
	"time"
)

// A slow fault slows a subtask by its factor against its normal rate: the
// rate of a second in which it kept up with its input, not one in which a
// slow fault held it or it caught up on the backlog one left behind.
func TestSlowFaultSlowsAgainstTheNormalRate(t *testing.T) {
	const sec = int64(time.Second)
	t0 := time.Unix(0, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	type batch struct {
		at              float64 // seconds
		processed, idle int64   // so far (idle in seconds)
	}
	var s slowing
	feed := func(bs ...batch) {
		for _, b := range bs {
			s.measure(at(b.at), b.processed, b.idle*sec/10) // idle in tenths of a second
		}
	}
	// 1,000 records/s, idle half the time: the normal rate.
	feed(batch{0, 0, 0}, batch{1, 1000, 5}, batch{2, 2000, 10})
	if s.rate != 1000 {
		t.Fatalf("normal rate %v, want 1000", s.rate)
	}
	s.begin(at(2), 10, 2*time.Second)
	first := s.perRecord
	// Slowed: 100 records/s and no idle time; then 5,000/s catching up,
	// never idle. Neither is the normal rate.
	feed(batch{3, 2100, 10}, batch{4, 2200, 10})
	s.active(at(4.1))
	feed(batch{5, 7200, 10}, batch{6, 12200, 10})
	if s.rate != 1000 {
		t.Fatalf("rate %v after a slow fault and its backlog, want the normal 1000", s.rate)
	}
	s.begin(at(6), 10, 2*time.Second)
	if s.perRecord != first || first != 10*time.Millisecond {
		t.Fatalf("a second fault holds each record %s, the first %s; want 10ms both", s.perRecord, first)
	}
	// Kept up again at 2,000/s once the second fault is over: the new
	// normal rate.
	s.active(at(8.1))
	feed(batch{9, 20000, 20})
	if s.rate != 1000 {
		t.Fatalf("rate %v over a second the fault held, want still 1000", s.rate)
	}
	feed(batch{10, 22000, 25})
	if s.rate != 2000 {
		t.Fatalf("rate %v, want the new normal 2000", s.rate)
	}
}

// A slow fault early in a run, before the first measure of the normal
// rate, goes by the rate so far: 1,000 records/s over a tenth of a second
// and more, slowed tenfold, holds each record 10 ms, not the 100 ms of the
// floor's 100 records/s.
func TestEarlySlowFaultGoesByTheRateSoFar(t *testing.T) {
	t0 := time.Unix(0, 0)
	var s slowing
	s.measure(t0, 0, 0)
	s.measure(t0.Add(150*time.Millisecond), 150, 0)
	s.begin(t0.Add(150*time.Millisecond), 10, time.Second)
	if s.rate != 0 || s.perRecord != 10*time.Millisecond {
		t.Fatalf("early fault: normal rate %v, each record held %s; want not measured yet, 10ms", s.rate, s.perRecord)
	}
	// Sooner than a tenth of a second: the floor.
	var soon slowing
	soon.measure(t0, 0, 0)
	soon.measure(t0.Add(50*time.Millisecond), 50, 0)
	soon.begin(t0.Add(50*time.Millisecond), 10, time.Second)
	if soon.perRecord != 100*time.Millisecond {
		t.Fatalf("a fault 50ms in holds each record %s, want the floor's 100ms", soon.perRecord)
	}
}
