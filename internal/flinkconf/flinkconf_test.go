package flinkconf

import (
	"strings"
	"testing"
	"time"
)

func TestParseFileNestedAndFlat(t *testing.T) {
	data := []byte(`execution:
  checkpointing:
    interval: 500 ms
    unaligned.enabled: true
restart-strategy.type: failure-rate
state.backend:
  type: hashmap
`)
	got, err := ParseFile("config.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{"execution.checkpointing.interval", "500 ms", File, "config.yaml:3"},
		{"execution.checkpointing.unaligned.enabled", "true", File, "config.yaml:4"},
		{"restart-strategy.type", "failure-rate", File, "config.yaml:5"},
		{"state.backend.type", "hashmap", File, "config.yaml:7"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestParseFileRefuses(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{"a: [1, 2]\n", "config.yaml:1: a: want a single value, found a list"},
		{"- a\n", "config.yaml:1: want a map of keys, found a list"},
		{"a.b: 1\na:\n  b: 2\n", "a.b is set twice (config.yaml:1 and config.yaml:3)"},
		{"a: b: c\n", "config.yaml"},
	} {
		_, err := ParseFile("config.yaml", []byte(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseFile(%q) = %v, want %q", tc.data, err, tc.want)
		}
	}
	if got, err := ParseFile("config.yaml", []byte("# nothing\n")); err != nil || len(got) != 0 {
		t.Errorf("a file of comments = %v, %v; want nothing", got, err)
	}
}

func TestParseDefine(t *testing.T) {
	e, err := ParseDefine("execution.checkpointing.interval=500ms")
	if err != nil || e.Key != "execution.checkpointing.interval" || e.Value != "500ms" || e.Source != Define {
		t.Errorf("ParseDefine = %+v, %v", e, err)
	}
	for _, bad := range []string{"no-equals", "=1"} {
		if _, err := ParseDefine(bad); err == nil {
			t.Errorf("ParseDefine(%q) succeeded", bad)
		}
	}
}

func TestDurationReadsFlinksSpelling(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"500 ms": 500 * time.Millisecond, "500ms": 500 * time.Millisecond, "500": 500 * time.Millisecond,
		"2 s": 2 * time.Second, "2s": 2 * time.Second, "10 min": 10 * time.Minute, "1m": time.Minute,
		"3 h": 3 * time.Hour, "1d": 24 * time.Hour, "2 seconds": 2 * time.Second, "1m30s": 90 * time.Second,
		"0": 0,
	} {
		got, err := Duration(in)
		if err != nil || got != want {
			t.Errorf("Duration(%q) = %v, %v; want %v", in, got, err, want)
		}
		if back, err := Duration(FormatDuration(want)); err != nil || back != want {
			t.Errorf("Duration(FormatDuration(%v) = %q) = %v, %v", want, FormatDuration(want), back, err)
		}
	}
	for _, bad := range []string{"", "fast", "2 weeks", "-1 s", "99999999999999999 d"} {
		if _, err := Duration(bad); err == nil {
			t.Errorf("Duration(%q) succeeded", bad)
		}
	}
}

func TestNearest(t *testing.T) {
	known := []string{"execution.checkpointing.interval", "execution.checkpointing.timeout", "state.backend.type"}
	for key, want := range map[string]string{
		"execution.checkpointing.intervall": "execution.checkpointing.interval",
		"execution.checkpointing.timout":    "execution.checkpointing.timeout",
		"state.backend":                     "state.backend.type",
		"parallelism":                       "",
	} {
		if got := Nearest(key, known); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", key, got, want)
		}
	}
}
