package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/faultline-dev/faultline/internal/clock"
)

// ErrStopBudget ends what a stopped run still does once its time is up:
// the time a stop may take, from the end of the run's context (see
// WindDown and RunOptions.StopBudget), has run out.
var ErrStopBudget = errors.New("the time a stop may take ran out")

// WindDown returns a context that keeps ctx's values but not its end, for
// what a run does after it was stopped (settling its outputs, checking
// them), and ends with ErrStopBudget budget after ctx ends, on clk. A
// budget of 0 never ends it. The caller calls the returned func when done
// with it.
func WindDown(ctx context.Context, clk clock.Clock, budget time.Duration) (context.Context, func()) {
	wctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	if budget <= 0 {
		return wctx, func() { cancel(nil) }
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-ctx.Done():
		case <-wctx.Done():
			return
		}
		up, t := clock.After(clk, budget)
		defer t.Stop()
		select {
		case <-up:
			cancel(ErrStopBudget)
		case <-wctx.Done():
		}
	}()
	return wctx, func() {
		cancel(nil)
		<-done
	}
}

// contextOf is a context that ends when stop closes (nil: never), for a
// call that takes a context; cancel releases it.
func contextOf(stop <-chan struct{}) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	if stop == nil {
		return ctx, cancel
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		cancel()
		<-done
	}
}

// stopped reports whether stop is closed (nil never is).
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}
