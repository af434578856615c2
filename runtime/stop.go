package runtime

import "context"

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
