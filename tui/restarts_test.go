package tui

import "testing"

func TestRestartBudget(t *testing.T) {
	for _, tc := range []struct {
		r    Restart
		want string
	}{
		{Restart{Strategy: "fixed-delay"}, "attempts 0/0"},
		{Restart{Strategy: "none"}, "no restarts"},
		{Restart{Strategy: "exponential-delay"}, "attempts 0 (unlimited)"},
	} {
		if got := restartBudget(tc.r); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.r.Strategy, got, tc.want)
		}
	}
}
