package runtime

import (
	"context"
	"errors"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/clock"
)

// WindDown's context outlives ctx by the budget, on the job's clock, and
// no more: what a stopped run still does (settling its outputs) has that
// long.
func TestWindDownEndsABudgetAfterItsContext(t *testing.T) {
	type key struct{}
	tests := []struct {
		name    string
		budget  time.Duration
		stop    bool          // ctx ends
		advance time.Duration // then the clock moves this far
		ended   bool
	}{
		{"ctx still going", time.Second, false, time.Hour, false},
		{"stopped, within the budget", time.Second, true, 999 * time.Millisecond, false},
		{"stopped, the budget spent", time.Second, true, time.Second, true},
		{"no budget: never ends", 0, true, time.Hour, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(time.Unix(0, 0))
			ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
			defer cancel()
			wind, done := WindDown(ctx, clk, tc.budget)
			defer done()
			if wind.Value(key{}) != "v" {
				t.Error("the wind-down context lost ctx's values")
			}
			if tc.stop {
				cancel()
				for tc.budget > 0 && clk.Pending() == 0 {
					goruntime.Gosched() // until the budget's timer is set
				}
			}
			clk.Advance(tc.advance)
			select {
			case <-wind.Done():
				if !tc.ended {
					t.Fatalf("ended (%v), want it going", context.Cause(wind))
				}
				if !errors.Is(context.Cause(wind), ErrStopBudget) {
					t.Errorf("cause %v, want ErrStopBudget", context.Cause(wind))
				}
			case <-time.After(50 * time.Millisecond):
				if tc.ended {
					t.Fatal("still going, want it ended")
				}
			}
		})
	}
}
