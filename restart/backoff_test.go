package restart

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)

// step is one failure and the decision the strategy must take after it.
type step struct {
	at         time.Duration // failure time, since t0
	canRestart bool
	backoff    time.Duration // checked only when canRestart
}

// drive feeds the failures to s in order and checks every decision.
func drive(t *testing.T, s BackoffStrategy, steps []step) {
	t.Helper()
	for i, st := range steps {
		s.NotifyFailure(errors.New("boom"), t0.Add(st.at))
		if got := s.CanRestart(); got != st.canRestart {
			t.Fatalf("failure %d at %s: CanRestart %v, want %v (status %+v)", i+1, st.at, got, st.canRestart, s.Status())
		}
		if !st.canRestart {
			continue
		}
		if got := s.Backoff(); got != st.backoff {
			t.Fatalf("failure %d at %s: Backoff %s, want %s", i+1, st.at, got, st.backoff)
		}
		if got := s.Status().NextDelay; got != st.backoff {
			t.Fatalf("failure %d at %s: Status.NextDelay %s, want %s", i+1, st.at, got, st.backoff)
		}
	}
}

func TestFailureRateDecisions(t *testing.T) {
	s := time.Second
	ms := time.Millisecond
	tests := []struct {
		name     string
		max      int
		interval time.Duration
		steps    []step
		reason   string // GaveUpReason after the last step; "" means it must not give up
	}{
		{
			name: "3 per 10s: three quick failures restart, the fourth gives up",
			max:  3, interval: 10 * s,
			steps: []step{
				{0, true, s}, {1 * s, true, s}, {2 * s, true, s},
				{3 * s, false, 0},
			},
			reason: "failure-rate: 4 failures within 10s, more than the 3 allowed",
		},
		{
			name: "3 per 10s: failures 4s apart never exceed the rate",
			max:  3, interval: 10 * s,
			steps: []step{
				{0, true, s}, {4 * s, true, s}, {8 * s, true, s}, {12 * s, true, s},
				{16 * s, true, s}, {20 * s, true, s}, {24 * s, true, s}, {28 * s, true, s},
			},
		},
		{
			// Flink's canRestart: (now - earliest) > interval, so a failure
			// exactly one interval before the latest still counts.
			name: "window includes a failure exactly one interval back",
			max:  1, interval: 10 * s,
			steps:  []step{{0, true, s}, {10 * s, false, 0}},
			reason: "failure-rate: 2 failures within 10s, more than the 1 allowed",
		},
		{
			name: "a failure just over one interval back has left the window",
			max:  1, interval: 10 * s,
			steps: []step{{0, true, s}, {10*s + ms, true, s}, {20*s + 2*ms, true, s}},
		},
		{
			// Flink docs example values: 3 per 5 min, delay 10 s (here 1 s).
			name: "3 per 5m: the window slides with the failures",
			max:  3, interval: 5 * time.Minute,
			steps: []step{
				{0, true, s}, {1 * time.Minute, true, s}, {2 * time.Minute, true, s},
				{6 * time.Minute, true, s},       // window [1m, 6m]: 1m, 2m, 6m
				{6*time.Minute + 30*s, true, s},  // window [1m30s, 6m30s]: 2m, 6m, 6m30s
				{6*time.Minute + 40*s, false, 0}, // window [1m40s, 6m40s]: 2m, 6m, 6m30s, 6m40s
			},
			reason: "failure-rate: 4 failures within 5m0s, more than the 3 allowed",
		},
		{
			name: "after giving up it stays given up, however late the next failure",
			max:  1, interval: 10 * s,
			steps:  []step{{0, true, s}, {1 * s, false, 0}, {time.Hour, false, 0}},
			reason: "failure-rate: 2 failures within 10s, more than the 1 allowed",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFailureRate(tc.max, tc.interval, s)
			if !f.CanRestart() || f.Status().GaveUp {
				t.Fatal("gave up before any failure")
			}
			drive(t, f, tc.steps)
			st := f.Status()
			if st.GaveUp != (tc.reason != "") || st.GaveUpReason != tc.reason {
				t.Fatalf("status %+v, want gave up with reason %q", st, tc.reason)
			}
			if st.MaxAttempts != 0 || st.MaxFailuresInWindow != tc.max || st.Window != tc.interval {
				t.Fatalf("status %+v", st)
			}
		})
	}
}

func TestFailureRateStatusCountsTheWindow(t *testing.T) {
	f := NewFailureRate(3, 10*time.Second, 500*time.Millisecond)
	want := []struct {
		at       time.Duration
		inWindow int
		attempts int
	}{
		{0, 1, 1},
		{4 * time.Second, 2, 2},
		{8 * time.Second, 3, 3},
		{12 * time.Second, 3, 4}, // 0s has left: 4, 8, 12
		{30 * time.Second, 1, 5},
	}
	for _, w := range want {
		f.NotifyFailure(errors.New("boom"), t0.Add(w.at))
		st := f.Status()
		if st.FailuresInWindow != w.inWindow || st.Attempts != w.attempts || st.NextDelay != 500*time.Millisecond {
			t.Fatalf("after failure at %s: status %+v, want %d in window, %d attempts", w.at, st, w.inWindow, w.attempts)
		}
	}
}

// fixedRand returns r on every call.
func fixedRand(r float64) func() float64 { return func() float64 { return r } }

// justBelowOne is the largest float64 below 1, the top of rnd's range.
var justBelowOne = math.Nextafter(1, 0)

// restartEach turns delays into steps where every failure comes the instant
// the previous restart happens: the worst loop, growing the backoff each time.
func restartEach(start time.Duration, delays ...time.Duration) []step {
	at := start
	steps := make([]step, len(delays))
	for i, d := range delays {
		steps[i] = step{at, true, d}
		at += d
	}
	return steps
}

func TestExponentialDelayDecisions(t *testing.T) {
	s := time.Second
	ms := time.Millisecond
	base := ExponentialConfig{
		Initial: s, Max: 10 * s, Multiplier: 1.5, JitterFactor: 0,
		ResetThreshold: time.Minute, AttemptsBeforeReset: UnlimitedAttempts,
	}
	with := func(f func(*ExponentialConfig)) ExponentialConfig { c := base; f(&c); return c }
	tests := []struct {
		name   string
		cfg    ExponentialConfig
		rnd    func() float64
		steps  []step
		reason string
	}{
		{
			name: "multiplier 1.5 grows 1, 1.5, 2.25, … and is capped at max",
			cfg:  base,
			steps: restartEach(0, s, 1500*ms, 2250*ms, 3375*ms, 5062500*time.Microsecond,
				7593750*time.Microsecond, 10*s, 10*s, 10*s),
		},
		{
			// Flink docs, Task Failure Recovery, "Exponential Delay Restart
			// Strategy" example: initial-backoff 1 s, backoff-multiplier 2,
			// max-backoff 10 s, jitter-factor 0 gives 1, 2, 4, 8, 10, 10 s.
			name:  "Flink documentation example: 1, 2, 4, 8, 10, 10 seconds",
			cfg:   with(func(c *ExponentialConfig) { c.Multiplier = 2 }),
			steps: restartEach(0, s, 2*s, 4*s, 8*s, 10*s, 10*s),
		},
		{
			// Same example with jitter-factor 0.1: "In the 3rd retry, the job
			// delay time is between 3.6 seconds and 4.4 seconds".
			name:  "Flink documentation jitter example, low end: 3rd retry 3.6s",
			cfg:   with(func(c *ExponentialConfig) { c.Multiplier = 2; c.JitterFactor = 0.1 }),
			rnd:   fixedRand(0),
			steps: restartEach(0, s, 1800*ms, 3600*ms, 7200*ms), // 1st clamped up to initial
		},
		{
			name:  "Flink documentation jitter example, high end: 3rd retry 4.4s",
			cfg:   with(func(c *ExponentialConfig) { c.Multiplier = 2; c.JitterFactor = 0.1 }),
			rnd:   fixedRand(justBelowOne),
			steps: restartEach(0, 1100*ms, 2200*ms, 4400*ms, 8800*ms, 10*s), // 5th clamped down to max
		},
		{
			name:  "jitter 0.1 on 1.5: 2.25s becomes 2.025s at rnd=0",
			cfg:   with(func(c *ExponentialConfig) { c.JitterFactor = 0.1 }),
			rnd:   fixedRand(0),
			steps: restartEach(0, s, 1350*ms, 2025*ms),
		},
		{
			name:  "jitter 0.1 on 1.5: 2.25s becomes 2.475s at rnd→1",
			cfg:   with(func(c *ExponentialConfig) { c.JitterFactor = 0.1 }),
			rnd:   fixedRand(justBelowOne),
			steps: restartEach(0, 1100*ms, 1650*ms, 2475*ms),
		},
		{
			name:  "rnd=0.5 is no jitter at all",
			cfg:   with(func(c *ExponentialConfig) { c.JitterFactor = 0.5 }),
			rnd:   fixedRand(0.5),
			steps: restartEach(0, s, 1500*ms, 2250*ms),
		},
		{
			// Flink 1.19+ draws the jitter from the exponential value before
			// the cap: 16 s ±20 % is far above 10 s, so the 5th delay is 10 s.
			name:  "jitter is drawn before the cap: far above max the delay is max",
			cfg:   with(func(c *ExponentialConfig) { c.Multiplier = 2; c.JitterFactor = 0.2 }),
			rnd:   fixedRand(0),
			steps: restartEach(0, s, 1600*ms, 3200*ms, 6400*ms, 10*s, 10*s),
		},
		{
			// Flink's own case: initial 2, max 7, multiplier 2, jitter 0.25.
			// The 3rd attempt is 8 ±2, clamped to [6, 7]; the 4th is 16 ±4,
			// always 7.
			name: "initial 2, max 7, multiplier 2, jitter 0.25, low end: the 4th attempt is 7",
			cfg: with(func(c *ExponentialConfig) {
				c.Initial, c.Max, c.Multiplier, c.JitterFactor = 2*s, 7*s, 2, 0.25
			}),
			rnd:   fixedRand(0),
			steps: restartEach(0, 2*s, 3*s, 6*s, 7*s, 7*s),
		},
		{
			name: "initial 2, max 7, multiplier 2, jitter 0.25, high end: the 4th attempt is 7",
			cfg: with(func(c *ExponentialConfig) {
				c.Initial, c.Max, c.Multiplier, c.JitterFactor = 2*s, 7*s, 2, 0.25
			}),
			rnd:   fixedRand(justBelowOne),
			steps: restartEach(0, 2500*ms, 5*s, 7*s, 7*s, 7*s),
		},
		{
			// Flink 1.19+: a failure reset-backoff-threshold after the last
			// restart resets the delay to initial-backoff.
			name: "running a full reset threshold after the restart resets to initial",
			cfg:  base,
			steps: append(restartEach(0, s, 1500*ms, 2250*ms),
				// The third restart happened at 1+1.5+2.25 = 4.75s.
				step{4750*ms + time.Minute, true, s},
				step{5750*ms + time.Minute, true, 1500 * ms}),
		},
		{
			name: "running just under the threshold keeps growing",
			cfg:  base,
			steps: append(restartEach(0, s, 1500*ms, 2250*ms),
				step{4750*ms + time.Minute - ms, true, 3375 * ms}),
		},
		{
			// The threshold counts from the restart, not from the failure:
			// 59.5s after the failure but only 58.5s after the restart.
			name: "the quiet period counts from the restart, not the failure",
			cfg:  base,
			steps: []step{
				{0, true, s},
				{59500 * ms, true, 1500 * ms},
			},
		},
		{
			// Flink docs: attempts-before-reset-backoff = 8 "means that if
			// the job still encounters exceptions after 8 consecutive
			// retries, it will fail".
			name:   "gives up after attempts-before-reset restarts without a reset",
			cfg:    with(func(c *ExponentialConfig) { c.AttemptsBeforeReset = 3 }),
			steps:  append(restartEach(0, s, 1500*ms, 2250*ms), step{4750 * ms, false, 0}),
			reason: "exponential-delay: no restart attempts left (3 allowed before a reset); failure 4 came 0s after the last restart, sooner than the 1m0s reset threshold",
		},
		{
			name: "a reset gives the attempts back",
			cfg:  with(func(c *ExponentialConfig) { c.AttemptsBeforeReset = 3 }),
			steps: append(restartEach(0, s, 1500*ms, 2250*ms),
				step{4750*ms + time.Hour, true, s},
				step{4750*ms + time.Hour + 1*s, true, 1500 * ms},
				step{4750*ms + time.Hour + 2500*ms, true, 2250 * ms},
				step{4750*ms + time.Hour + 4750*ms + 2*s, false, 0}),
			reason: "exponential-delay: no restart attempts left (3 allowed before a reset); failure 7 came 2s after the last restart, sooner than the 1m0s reset threshold",
		},
		{
			// Flink 1.19+ merges failures that arrive while a restart is
			// pending into that attempt.
			name: "a failure during the wait joins the pending restart",
			cfg:  with(func(c *ExponentialConfig) { c.AttemptsBeforeReset = 2 }),
			steps: []step{
				{0, true, s},
				{1 * s, true, 1500 * ms},    // restart at 2.5s
				{2 * s, true, 500 * ms},     // merged: 0.5s left
				{2400 * ms, true, 100 * ms}, // merged: 0.1s left
				{2500*ms + 5*s, false, 0},   // the third attempt
			},
			reason: "exponential-delay: no restart attempts left (2 allowed before a reset); failure 5 came 5s after the last restart, sooner than the 1m0s reset threshold",
		},
		{
			name:   "one attempt allowed",
			cfg:    with(func(c *ExponentialConfig) { c.AttemptsBeforeReset = 1 }),
			steps:  []step{{0, true, s}, {2 * s, false, 0}},
			reason: "exponential-delay: no restart attempts left (1 allowed before a reset); failure 2 came 1s after the last restart, sooner than the 1m0s reset threshold",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rnd := tc.rnd
			if rnd == nil {
				rnd = func() float64 { t.Fatal("random source used with jitter 0"); return 0 }
			}
			e := NewExponentialDelay(tc.cfg, rnd)
			if !e.CanRestart() || e.Backoff() != 0 || e.Status().GaveUp {
				t.Fatalf("before any failure: can %v, backoff %s, status %+v", e.CanRestart(), e.Backoff(), e.Status())
			}
			drive(t, e, tc.steps)
			st := e.Status()
			if st.GaveUp != (tc.reason != "") || st.GaveUpReason != tc.reason {
				t.Fatalf("status %+v,\nwant reason %q", st, tc.reason)
			}
			if st.GaveUp && (st.NextDelay != 0 || e.Backoff() != 0) {
				t.Fatalf("gave up but still has a delay: %+v", st)
			}
		})
	}
}

func TestExponentialDelayStatusAttempts(t *testing.T) {
	cfg := ExponentialConfig{Initial: time.Second, Max: time.Minute, Multiplier: 2,
		ResetThreshold: time.Minute, AttemptsBeforeReset: 3}
	e := NewExponentialDelay(cfg, nil)
	at := t0
	for i := 1; i <= 3; i++ {
		e.NotifyFailure(errors.New("boom"), at)
		if st := e.Status(); st.Attempts != i || st.MaxAttempts != 3 || st.GaveUp {
			t.Fatalf("failure %d: status %+v", i, st)
		}
		at = at.Add(e.Backoff())
	}
	e.NotifyFailure(errors.New("boom"), at)
	if st := e.Status(); st.Attempts != 3 || !st.GaveUp {
		t.Fatalf("after giving up: status %+v", st)
	}

	unlimited := NewExponentialDelay(DefaultExponential(), nil)
	unlimited.NotifyFailure(errors.New("boom"), t0)
	if st := unlimited.Status(); st.Attempts != 1 || st.MaxAttempts != 0 {
		t.Fatalf("unlimited: status %+v, want 1 attempt of no maximum", st)
	}
}

func TestExponentialDelayDefaultRandomStaysInBounds(t *testing.T) {
	cfg := DefaultExponential() // jitter 0.1
	e := NewExponentialDelay(cfg, nil)
	at := t0
	backoff := float64(cfg.Initial)
	for i := range 20 {
		e.NotifyFailure(errors.New("boom"), at)
		d := e.Backoff()
		lo := max(cfg.Initial, time.Duration(backoff*(1-cfg.JitterFactor)))
		hi := min(cfg.Max, time.Duration(math.Ceil(backoff*(1+cfg.JitterFactor))))
		if d < lo || d > hi {
			t.Fatalf("failure %d: delay %s outside [%s, %s]", i+1, d, lo, hi)
		}
		at = at.Add(d)
		backoff = math.Min(backoff*cfg.Multiplier, float64(cfg.Max))
	}
}

func TestDefaults(t *testing.T) {
	// Flink 1.20 RestartStrategyOptions and the Task Failure Recovery page.
	want := ExponentialConfig{
		Initial:             time.Second, // restart-strategy.exponential-delay.initial-backoff
		Max:                 time.Minute, // restart-strategy.exponential-delay.max-backoff
		Multiplier:          1.5,         // restart-strategy.exponential-delay.backoff-multiplier
		JitterFactor:        0.1,         // restart-strategy.exponential-delay.jitter-factor
		ResetThreshold:      time.Hour,   // restart-strategy.exponential-delay.reset-backoff-threshold
		AttemptsBeforeReset: math.MaxInt32,
	}
	if got := DefaultExponential(); got != want {
		t.Fatalf("DefaultExponential() = %+v, want %+v", got, want)
	}
	if err := DefaultExponential().Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	fr := DefaultFailureRate()
	if fr.MaxFailures != 1 || fr.Interval != time.Minute || fr.Delay != time.Second {
		t.Fatalf("DefaultFailureRate() = %+v", fr)
	}
	for _, name := range Names() {
		if _, err := Parse(name, DefaultOptions()); err != nil {
			t.Fatalf("Parse(%q, DefaultOptions()): %v", name, err)
		}
	}
}

func TestDescribeAndName(t *testing.T) {
	tests := []struct {
		s        BackoffStrategy
		name     string
		describe string
	}{
		{DefaultFailureRate(), "failure-rate", "failure-rate (at most 1 failure per 1m0s, delay 1s)"},
		{NewFailureRate(3, 10*time.Second, 0), "failure-rate", "failure-rate (at most 3 failures per 10s, delay 0s)"},
		{NewExponentialDelay(DefaultExponential(), nil), "exponential-delay",
			"exponential-delay (initial 1s, max 1m0s, multiplier 1.5, jitter 0.1, reset after 1h0m0s, attempts before reset infinite)"},
		{NewExponentialDelay(ExponentialConfig{Initial: 10 * time.Second, Max: 2 * time.Minute, Multiplier: 1.4,
			JitterFactor: 0.1, ResetThreshold: 10 * time.Minute, AttemptsBeforeReset: 10}, nil), "exponential-delay",
			"exponential-delay (initial 10s, max 2m0s, multiplier 1.4, jitter 0.1, reset after 10m0s, attempts before reset 10)"},
	}
	for _, tc := range tests {
		t.Run(tc.describe, func(t *testing.T) {
			if got := tc.s.Name(); got != tc.name {
				t.Errorf("Name() = %q, want %q", got, tc.name)
			}
			if got := tc.s.Describe(); got != tc.describe {
				t.Errorf("Describe() = %q, want %q", got, tc.describe)
			}
		})
	}
}

func TestParseBuildsTheNamedStrategy(t *testing.T) {
	opts := DefaultOptions()
	opts.Attempts, opts.Delay = 3, 250*time.Millisecond
	opts.FailureRateMaxFailures, opts.FailureRateInterval, opts.FailureRateDelay = 3, 10*time.Second, 2*time.Second
	opts.Exponential.Initial = 2 * time.Second
	opts.Rand = fixedRand(0.5)
	tests := []struct {
		name     string
		wantName string
		check    func(t *testing.T, s BackoffStrategy)
	}{
		{"fixed-delay", "fixed-delay", func(t *testing.T, s BackoffStrategy) {
			if f := s.(*FixedDelay); f.MaxAttempts != 3 || f.Delay != 250*time.Millisecond {
				t.Errorf("got %+v", f)
			}
		}},
		{"fixeddelay", "fixed-delay", nil},
		{"failure-rate", "failure-rate", func(t *testing.T, s BackoffStrategy) {
			if f := s.(*FailureRate); f.MaxFailures != 3 || f.Interval != 10*time.Second || f.Delay != 2*time.Second {
				t.Errorf("got %+v", f)
			}
		}},
		{"FailureRate", "failure-rate", nil},
		{"exponential-delay", "exponential-delay", func(t *testing.T, s BackoffStrategy) {
			e := s.(*ExponentialDelay)
			if e.Config() != opts.Exponential {
				t.Errorf("config %+v, want %+v", e.Config(), opts.Exponential)
			}
			e.NotifyFailure(errors.New("boom"), t0)
			if e.Backoff() != 2*time.Second { // rnd 0.5: no jitter
				t.Errorf("first backoff %s, want 2s", e.Backoff())
			}
		}},
		{"exponentialdelay", "exponential-delay", nil},
		{"none", "none", nil},
		{"off", "none", nil},
		{"disable", "none", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(tc.name, opts)
			if err != nil {
				t.Fatal(err)
			}
			if s.Name() != tc.wantName {
				t.Fatalf("Name() = %q, want %q", s.Name(), tc.wantName)
			}
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		strategy string
		mutate   func(*Options)
		want     string // the whole error message
	}{
		{"restart-forever", nil,
			`restart-strategy.type "restart-forever": want one of fixed-delay, failure-rate, exponential-delay, none, throwing`},
		{"", nil, `restart-strategy.type "": want one of fixed-delay, failure-rate, exponential-delay, none, throwing`},
		{"fixed-delay", func(o *Options) { o.Attempts = -1 }, "restart-strategy.fixed-delay.attempts -1: want 0 or more"},
		{"fixed-delay", func(o *Options) { o.Delay = -time.Second }, "restart-strategy.fixed-delay.delay -1s: want 0 or more"},
		{"failure-rate", func(o *Options) { o.FailureRateMaxFailures = 0 }, "restart-strategy.failure-rate.max-failures-per-interval 0: want 1 or more"},
		{"failure-rate", func(o *Options) { o.FailureRateInterval = 0 }, "restart-strategy.failure-rate.failure-rate-interval 0s: want more than 0"},
		{"failure-rate", func(o *Options) { o.FailureRateDelay = -time.Millisecond }, "restart-strategy.failure-rate.delay -1ms: want 0 or more"},
		{"exponential-delay", func(o *Options) { o.Exponential.Initial = -time.Second }, "restart-strategy.exponential-delay.initial-backoff -1s: want more than 0"},
		{"exponential-delay", func(o *Options) { o.Exponential.Max = 0 }, "restart-strategy.exponential-delay.max-backoff 0s: want more than 0"},
		{"exponential-delay", func(o *Options) { o.Exponential.Max = 500 * time.Millisecond },
			"restart-strategy.exponential-delay.max-backoff 500ms: want at least the initial backoff (1s)"},
		{"exponential-delay", func(o *Options) { o.Exponential.Multiplier = 0.5 }, "restart-strategy.exponential-delay.backoff-multiplier 0.5: want 1 or more"},
		{"exponential-delay", func(o *Options) { o.Exponential.Multiplier = math.NaN() }, "restart-strategy.exponential-delay.backoff-multiplier NaN: want 1 or more"},
		{"exponential-delay", func(o *Options) { o.Exponential.JitterFactor = -0.1 }, "restart-strategy.exponential-delay.jitter-factor -0.1: want a fraction from 0 to 1"},
		{"exponential-delay", func(o *Options) { o.Exponential.JitterFactor = 1.5 }, "restart-strategy.exponential-delay.jitter-factor 1.5: want a fraction from 0 to 1"},
		{"exponential-delay", func(o *Options) { o.Exponential.ResetThreshold = -time.Minute }, "restart-strategy.exponential-delay.reset-backoff-threshold -1m0s: want more than 0"},
		{"exponential-delay", func(o *Options) { o.Exponential.AttemptsBeforeReset = 0 },
			"restart-strategy.exponential-delay.attempts-before-reset-backoff 0: want 1 or more (2147483647 for no limit)"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			opts := DefaultOptions()
			if tc.mutate != nil {
				tc.mutate(&opts)
			}
			s, err := Parse(tc.strategy, opts)
			if err == nil {
				t.Fatalf("Parse(%q) = %s, want error %q", tc.strategy, s.Describe(), tc.want)
			}
			if err.Error() != tc.want {
				t.Fatalf("error %q,\nwant  %q", err, tc.want)
			}
			var oe *OptionError
			if !errors.As(err, &oe) || !errors.Is(err, ErrInvalidOption) || !strings.HasPrefix(tc.want, oe.Key+" ") {
				t.Fatalf("error %#v is not an *OptionError wrapping ErrInvalidOption for its key", err)
			}
		})
	}
}

func TestParseChecksOnlyTheChosenStrategy(t *testing.T) {
	opts := DefaultOptions()
	opts.Exponential.Multiplier = 0 // wrong, but not used by fixed-delay
	opts.FailureRateMaxFailures = 0
	if _, err := Parse("fixed-delay", opts); err != nil {
		t.Fatalf("fixed-delay refused for another strategy's option: %v", err)
	}
}

// The strategies implement BackoffStrategy.
var (
	_ BackoffStrategy = (*FailureRate)(nil)
	_ BackoffStrategy = (*ExponentialDelay)(nil)
)

// Reset forgets every failure: a strategy that gave up restarts again, with
// all its attempts, as a newly submitted job's would.
func TestResetForgetsEveryFailure(t *testing.T) {
	at := time.Unix(1000, 0)
	exp := DefaultExponential()
	exp.AttemptsBeforeReset = 2
	for _, s := range []BackoffStrategy{
		NewFixedDelay(2, time.Second),
		&None{},
		NewFailureRate(2, time.Minute, time.Second),
		NewExponentialDelay(exp, func() float64 { return 0.5 }),
	} {
		t.Run(s.Name(), func(t *testing.T) {
			fresh := s.Status()
			for i := 0; i < 5 && (i == 0 || s.CanRestart()); i++ {
				s.NotifyFailure(errors.New("boom"), at.Add(time.Duration(i)*time.Second))
			}
			if s.CanRestart() || !s.Status().GaveUp {
				t.Fatalf("did not give up after 5 failures: %+v", s.Status())
			}
			s.Reset()
			if got := s.Status(); got != fresh {
				t.Fatalf("after Reset: %+v, want the fresh %+v", got, fresh)
			}
			s.NotifyFailure(errors.New("boom"), at.Add(time.Hour))
			if want := s.Name() != "none"; s.CanRestart() != want {
				t.Fatalf("first failure after Reset: CanRestart %v, want %v", !want, want)
			}
		})
	}
}
