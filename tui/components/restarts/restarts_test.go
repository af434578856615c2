package restarts

import (
	"testing"

	"faultline/runtime/view"
)

func TestRestartBudget(t *testing.T) {
	for _, tc := range []struct {
		r    view.Restart
		want string
	}{
		{view.Restart{Strategy: "fixed-delay"}, "attempts 0/0"},
		{view.Restart{Strategy: "none"}, "no restarts"},
		{view.Restart{Strategy: "exponential-delay"}, "attempts 0 (unlimited)"},
	} {
		if got := restartBudget(tc.r); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.r.Strategy, got, tc.want)
		}
	}
}
