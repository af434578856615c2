package common

import (
	"strings"
	"testing"
	"time"
)

func TestFormats(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{HumanBytes(0), "0B"}, {HumanBytes(512), "512B"}, {HumanBytes(1258291), "1.2MB"}, {HumanBytes(40960), "40KB"},
		{HumanBytes(1 << 30), "1GB"},
		{HumanRate(0), "0/s"}, {HumanRate(210.4), "210/s"}, {HumanRate(2104), "2.1k/s"}, {HumanRate(12345), "12k/s"},
		{HumanRate(1.5e6), "1.5M/s"},
		{HumanDuration(0), "0ms"}, {HumanDuration(300 * time.Microsecond), "<1ms"}, {HumanDuration(1500 * time.Microsecond), "1.5ms"},
		{HumanDuration(38 * time.Millisecond), "38ms"}, {HumanDuration(1200 * time.Millisecond), "1.2s"},
		{HumanDuration(65 * time.Second), "1m05s"},
		{Countdown(800 * time.Millisecond), "0.8s"}, {Countdown(-time.Second), "0.0s"}, {Countdown(12 * time.Second), "12s"},
		{Thousands(18204), "18,204"}, {Thousands(-1234567), "-1,234,567"}, {Thousands(12), "12"},
		{WallClock(time.Date(2025, 3, 14, 12, 1, 7, 412_000_000, time.UTC)), "12:01:07.412"},
		{Truncate("abcdef", 4), "abc…"}, {PadLeft("ab", 4), "  ab"}, {PadRight("ab", 4), "ab  "},
		{TruncateWords("queued 1,264 ·=28", 15), "queued 1,264…"}, {TruncateWords("queued 1,264", 12), "queued 1,264"},
		{TruncateWords("queued 1,264", 11), "queued…"}, {TruncateWords("1,264,000", 5), "1,26…"},
		{strings.Join(Wrap("read again after a restore (at-least-once)", 16, 0), "|"), "read again after|a restore|(at-least-once)"},
		{strings.Join(Wrap("one two three four", 9, 2), "|"), "one two|three…"},
		{strings.Join(JoinWrapped([]string{"completed", "13/13 acknowledged", "end to end 44ms"}, " · ", 34), "|"),
			"completed · 13/13 acknowledged|end to end 44ms"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestThemes(t *testing.T) {
	for _, name := range []string{"", "default", "high-contrast"} {
		if _, ok := ThemeNamed(name); !ok {
			t.Errorf("theme %q unknown", name)
		}
	}
	if _, ok := ThemeNamed("neon"); ok {
		t.Error("theme neon known")
	}
	if hc := HighContrastTheme(); hc.Muted == DefaultTheme().Muted {
		t.Error("the high-contrast theme keeps the grey that washes out on a projector")
	}
}

// A subtask's name is cut in its operator's part: two subtasks of one
// long-named operator stay apart.
func TestTruncateTaskKeepsTheIndex(t *testing.T) {
	for _, c := range []struct {
		name string
		w    int
		want string
	}{
		{"join/0", 24, "join/0"},
		{"orders-source→parse-orders/1", 20, "orders-source→par…/1"},
		{"payments-source→parse-payments/0", 16, "payments-sour…/0"},
		{"x/12345", 5, "x/12…"},
	} {
		if got := TruncateTask(c.name, c.w); got != c.want || Width(got) > c.w {
			t.Errorf("TruncateTask(%q, %d) = %q, want %q (at most %d cells)", c.name, c.w, got, c.want, c.w)
		}
	}
}
