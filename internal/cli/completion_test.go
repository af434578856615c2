package cli

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/checkpoint/badgerstore"
)

// complete is what shell completion offers for args (the last one being
// completed).
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	root.SetArgs(append([]string{"__complete"}, args...))
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(out.String(), "\n") {
		if l != "" && !strings.HasPrefix(l, ":") {
			got = append(got, strings.SplitN(l, "\t", 2)[0])
		}
	}
	return got
}

// Shell completion completes the flags' values, -D keys, fault specs and
// tour names, for run and for faultline alone.
func TestCompletionOffersTheValues(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--restart-strategy", ""}, []string{"fixed-delay", "failure-rate", "exponential-delay", "none", "throwing"}},
		{[]string{"--failover-strategy", ""}, []string{"full", "region", "individual", "none"}},
		{[]string{"run", "--mode", ""}, []string{"exactly-once", "unaligned", "at-least-once"}},
		{[]string{"run", "--log-level", ""}, []string{"debug", "info", "warn", "error"}},
		{[]string{"run", "--inject", "after=3s,fault="}, []string{"after=3s,fault=panic", "after=3s,fault=crash"}},
		{[]string{"run", "-D", ""}, []string{"execution.checkpointing.interval=", "restart-strategy.type=", "faultline.records="}},
		{[]string{"tour", ""}, []string{"alignment", "recovery"}},
	} {
		got := complete(t, c.args...)
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("%q completes to %v, without %q", c.args, got, w)
			}
		}
	}
}

// checkpoints inspect and delete complete the state dir's checkpoint ids.
func TestCompletionOffersTheCheckpointIDs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := badgerstore.Open(checkpointDir(dir), 3)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, c := range []*checkpoint.Completed{
		{ID: 4, Job: "orders", Mode: "exactly-once", TriggerTime: t0, CompletionTime: t0},
		{ID: 7, Job: "orders", Mode: "exactly-once", Kind: checkpoint.KindSavepoint, TriggerTime: t0, CompletionTime: t0},
	} {
		if err := s.Add(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	for _, sub := range []string{"inspect", "delete"} {
		if got := complete(t, "checkpoints", sub, "--state-dir", dir, ""); !slices.Equal(got, []string{"4", "7"}) {
			t.Errorf("checkpoints %s completes to %v, want 4 and 7", sub, got)
		}
	}
}
