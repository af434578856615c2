package spec_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/spec"
)

func TestSizeTooBig(t *testing.T) {
	within := spec.Size{Operators: spec.MaxOperators, Subtasks: spec.MaxSubtasks, SinkSubtasks: spec.MaxSinkSubtasks, Channels: spec.MaxChannels, Topics: spec.MaxTopics}
	over := func(f func(*spec.Size)) spec.Size { s := within; f(&s); return s }
	tests := []struct {
		name string
		size spec.Size
		want string // "" within the limits
	}{
		{"the default job", spec.SizeOf(orders.Default()), ""},
		{"every limit reached", within, ""},
		{"operators", over(func(s *spec.Size) { s.Operators++ }), "65 operators, more than the 64 faultline runs; split it into smaller jobs"},
		{"subtasks", over(func(s *spec.Size) { s.Subtasks++ }), "257 subtasks (the operators' parallelism added up), more than the 256"},
		{"sink subtasks", over(func(s *spec.Size) { s.SinkSubtasks++ }), "33 sink subtasks (the sinks' parallelism added up), more than the 32"},
		{"channels", over(func(s *spec.Size) { s.Channels++ }), "16385 channels between subtasks"},
		{"topics", over(func(s *spec.Size) { s.Topics++ }), "9 Kafka topics (its sources' and sinks' topics), more than the 8"},
		{"operators named first", spec.Size{Operators: 10002, Subtasks: 10002, SinkSubtasks: 3334, Channels: 6668, Topics: 3335}, "10002 operators"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.size.TooBig()
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("TooBig() = %q, want %q", got, tc.want)
			}
			if tc.want != "" && !strings.HasPrefix(got, "the job is too big to run: ") {
				t.Errorf("TooBig() = %q does not say that the job is too big", got)
			}
		})
	}
}

func TestSizeOf(t *testing.T) {
	if got, want := spec.SizeOf(orders.Default()), (spec.Size{Operators: 7, Subtasks: 13, SinkSubtasks: 1, Channels: 2 + 2 + 4 + 4 + 4 + 2, Topics: 3}); got != want {
		t.Errorf("default job: %+v, want %+v", got, want)
	}
	j := mustParse(t, pipelines(2, 3, "rebalance", "out"))
	// Per pipeline: 3 operators of 3 subtasks, two edges of 3×3 channels.
	if got, want := spec.SizeOf(j), (spec.Size{Operators: 6, Subtasks: 18, SinkSubtasks: 6, Channels: 36, Topics: 2}); got != want {
		t.Errorf("two pipelines: %+v, want %+v", got, want)
	}
}

// A spec past a limit is refused in one line that names the file, the line
// of the operators key, what is too big and the limit; one at the limit
// is not.
func TestParseRefusesJobsTooBig(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string // "" parses
	}{
		{"operators at the limit", pipelines(21, 1, "forward", "out"), ""},
		{"operators past the limit", pipelines(22, 1, "forward", "out"), "66 operators, more than the 64"},
		{"the tester's 3,334 pipelines", pipelines(3334, 1, "forward", "out-%d"), "10002 operators, more than the 64"},
		{"subtasks past the limit", pipelines(2, 43, "forward", "out"), "258 subtasks"},
		{"sink subtasks at the limit", pipelines(2, 16, "forward", "out"), ""},
		{"sink subtasks past the limit", pipelines(3, 11, "forward", "out"), "33 sink subtasks"},
		// 256 subtasks hold at most 16,384 channels: two operators of 128,
		// all to all; the pure table above holds the channel limit itself.
		{"channels at the limit", wide(127, 128, 1), ""},
		{"channels and sinks at the limit", wide(112, 112, 32), ""},
		{"topics at the limit", pipelines(7, 1, "forward", "out-%d"), ""},
		{"topics past the limit", pipelines(8, 1, "forward", "out-%d"), "9 Kafka topics"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse("jobs/big.yaml", []byte(tc.yaml))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var e *spec.Error
			if !errors.As(err, &e) || e.Line != 3 || e.Field != "operators" || !strings.Contains(e.Msg, tc.want) {
				t.Fatalf("err = %v, want jobs/big.yaml:3: operators: …%s…", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "jobs/big.yaml:3: operators: the job is too big to run: ") || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %q, want one line naming the file and the line", err)
			}
		})
	}
}

func TestSetParallelismsKeepsTheJobWithinLimits(t *testing.T) {
	j := orders.Default()
	err := j.SetParallelisms(map[string]int{"join": 128, "revenue": 128})
	if err == nil || !strings.Contains(err.Error(), "parallelism of join, revenue: the job is too big to run: 265 subtasks") {
		t.Fatalf("err = %v, want 265 subtasks refused", err)
	}
	if j.Op("join").Parallelism != 2 {
		t.Error("a refused SetParallelisms changed the job")
	}
	if err := j.SetParallelism("sink", 33); err == nil || !strings.Contains(err.Error(), "33 sink subtasks") {
		t.Fatalf("err = %v, want 33 sink subtasks refused", err)
	}
}

// pipelines is a spec of n pipelines source → enrich → sink, each of
// parallelism p over edge, the sinks writing topic (a format of the
// pipeline's number, or one name for all). Line 3 is the operators key.
func pipelines(n, p int, edge, topic string) string {
	var b strings.Builder
	b.WriteString("name: big\nverify: orders\noperators:\n")
	for i := range n {
		t := topic
		if strings.Contains(topic, "%d") {
			t = fmt.Sprintf(topic, i)
		}
		fmt.Fprintf(&b, "  - {name: s%d, type: source, topic: orders, parallelism: %d}\n", i, p)
		fmt.Fprintf(&b, "  - {name: e%d, type: enrich, parallelism: %d, inputs: [{from: s%d, edge: %s}]}\n", i, p, i, edge)
		fmt.Fprintf(&b, "  - {name: k%d, type: sink, topic: %s, parallelism: %d, inputs: [{from: e%d, edge: %s}]}\n", i, t, p, i, edge)
	}
	return b.String()
}

// wide is one pipeline of a source, an enrich and a sink of parallelism
// s, e and k, all to all.
func wide(s, e, k int) string {
	return fmt.Sprintf("name: wide\nverify: orders\noperators:\n"+
		"  - {name: s, type: source, topic: orders, parallelism: %d}\n"+
		"  - {name: e, type: enrich, parallelism: %d, inputs: [{from: s, edge: rebalance}]}\n"+
		"  - {name: k, type: sink, topic: out, parallelism: %d, inputs: [{from: e, edge: rebalance}]}\n", s, e, k)
}

func mustParse(t *testing.T, yaml string) *spec.Job {
	t.Helper()
	j, err := parse("t.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return j
}
