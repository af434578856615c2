package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/flinkconf"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/spec"
)

// configured parses args as run's command line and applies the
// configuration of file, env and the -D definitions among args to it.
func configured(t *testing.T, file string, env map[string]string, args ...string) (*runOptions, map[string]flinkconf.Entry, error) {
	t.Helper()
	cmd, o := newRunCmdOptions()
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	from, err := applyConfig(cmd.Flags(), file, o.defines, lookup)
	return o, from, err
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A flag beats -D, -D the environment, the environment the config file,
// and the config file the default.
func TestConfigPrecedence(t *testing.T) {
	file := writeConfig(t, `execution:
  checkpointing:
    interval: 1 s
    timeout: 1 min
    min-pause: 100 ms
    max-concurrent-checkpoints: 3
`)
	env := map[string]string{"FAULTLINE_CHECKPOINT_INTERVAL": "2 s", "FAULTLINE_CHECKPOINT_TIMEOUT": "2 min", "FAULTLINE_MIN_PAUSE": "200ms"}
	o, from, err := configured(t, file, env,
		"-D", "execution.checkpointing.interval=3s", "-D", "execution.checkpointing.timeout=3 min", "--checkpoint-interval", "4s")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		flag string
		got  time.Duration
		want time.Duration
		src  flinkconf.Source
	}{
		{"checkpoint-interval", o.interval, 4 * time.Second, flinkconf.Flag},
		{"checkpoint-timeout", o.timeout, 3 * time.Minute, flinkconf.Define},
		{"min-pause", o.minPause, 200 * time.Millisecond, flinkconf.Env},
	} {
		if c.got != c.want || from[c.flag].Source != c.src {
			t.Errorf("--%s = %v from %s, want %v from %s", c.flag, c.got, from[c.flag].Source, c.want, c.src)
		}
	}
	if o.maxConcurrent != 3 || from["max-concurrent-checkpoints"].Where != file+":6" {
		t.Errorf("max concurrent = %d from %+v, want 3 from %s:6", o.maxConcurrent, from["max-concurrent-checkpoints"], file)
	}
	if o.tolerable != 0 || from["tolerable-failed-checkpoints"].Source != flinkconf.Default {
		t.Errorf("tolerable = %d from %s, want the default", o.tolerable, from["tolerable-failed-checkpoints"].Source)
	}
}

// Values in Flink's spelling read as faultline's.
func TestConfigReadsFlinksSpelling(t *testing.T) {
	o, _, err := configured(t, "", nil,
		"-D", "state.backend.type=hashmap", "-D", "scan.startup.mode=earliest-offset",
		"-D", "execution.checkpointing.mode=AT_LEAST_ONCE", "-D", "restart-strategy.type=exponentialdelay",
		"-D", "execution.checkpointing.unaligned.enabled=TRUE", "-D", "state.backend.incremental=true",
		"--sink-guarantee", "EXACTLY_ONCE")
	if err != nil {
		t.Fatal(err)
	}
	if o.stateBackend != "heap" || o.kafka.startup != "earliest" || o.mode != "at-least-once" ||
		o.restartStrategy != "exponential-delay" || !o.unaligned || !o.incremental || o.kafka.sinkGuarantee != "exactly-once" {
		t.Errorf("options = backend %q, startup %q, mode %q, restart %q, unaligned %v, incremental %v, guarantee %q",
			o.stateBackend, o.kafka.startup, o.mode, o.restartStrategy, o.unaligned, o.incremental, o.kafka.sinkGuarantee)
	}
}

// An unknown key is a usage error that names the nearest known one.
func TestConfigUnknownKeySuggests(t *testing.T) {
	for _, c := range []struct {
		file, define, want string
	}{
		{"", "execution.checkpointing.intervall=1s", `-D: unknown configuration key "execution.checkpointing.intervall": did you mean execution.checkpointing.interval?`},
		{"restart-strategy:\n  typ: none\n", "", `config.yaml:2: unknown configuration key "restart-strategy.typ": did you mean restart-strategy.type?`},
		{"", "nothing.like.it=1", `unknown configuration key "nothing.like.it" (faultline run --print-config`},
	} {
		var args []string
		file := ""
		if c.file != "" {
			file = writeConfig(t, c.file)
		}
		if c.define != "" {
			args = []string{"-D", c.define}
		}
		_, _, err := configured(t, file, nil, args...)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q %q: err = %v, want a usage error with %q", c.file, c.define, err, c.want)
		}
	}
}

// --print-config prints what --config reads back: the same values.
func TestPrintConfigRoundTrips(t *testing.T) {
	cmd, o := newRunCmdOptions()
	args := []string{"-D", "restart-strategy.type=failure-rate", "--parallelism", "join=3,revenue=1",
		"--topic", "orders-source=shop.orders", "--checkpoint-interval", "750ms", "--sink-transaction-timeout", "90s"}
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	from, err := applyConfig(cmd.Flags(), "", o.defines, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	var first bytes.Buffer
	printConfig(&first, cmd.Flags(), from)

	cmd2, _ := newRunCmdOptions()
	from2, err := applyConfig(cmd2.Flags(), writeConfig(t, first.String()), nil, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("--config of what --print-config printed: %v\n%s", err, first.String())
	}
	var second bytes.Buffer
	printConfig(&second, cmd2.Flags(), from2)
	values := func(s string) string {
		var out []string
		for _, line := range strings.Split(s, "\n") {
			v, _, _ := strings.Cut(line, "  # ")
			out = append(out, v)
		}
		return strings.Join(out, "\n")
	}
	if values(first.String()) != values(second.String()) {
		t.Errorf("read back differs:\n%s\n---\n%s", first.String(), second.String())
	}
	for _, want := range []string{"restart-strategy.type: failure-rate  # -D", `faultline.parallelism: "join=3,revenue=1"  # flag`,
		"execution.checkpointing.interval: 750 ms  # flag", "faultline.sink-transaction-timeout: 90 s  # flag"} {
		if !strings.Contains(first.String(), want+"\n") {
			t.Errorf("--print-config lacks %q:\n%s", want, first.String())
		}
	}
	if !strings.Contains(second.String(), "restart-strategy.type: failure-rate  # config file: ") {
		t.Errorf("read back, the strategy does not come from the file:\n%s", second.String())
	}
}

// parallelism.default sets the operators whose spec gives no parallelism
// and --parallelism does not name.
func TestDefaultParallelismLeavesWhatTheSpecSays(t *testing.T) {
	job, err := spec.Parse("job.yaml", []byte(`name: small
verify: paid-orders
operators:
  - {name: orders-source, type: source, topic: orders}
  - {name: payments-source, type: source, topic: payments, parallelism: 2}
  - {name: parse-orders, type: parse, schema: order, inputs: [{from: orders-source, edge: forward}]}
  - {name: parse-payments, type: parse, schema: payment, parallelism: 2, inputs: [{from: payments-source, edge: forward}]}
  - {name: join, type: join, inputs: [{from: parse-orders, edge: hash, key: order_id}, {from: parse-payments, edge: hash, key: order_id}]}
  - {name: sink, type: sink, topic: revenue, inputs: [{from: join, edge: rebalance}]}
`), orders.Catalogue())
	if err != nil {
		t.Fatal(err)
	}
	o := &runOptions{defaultParallelism: 3, parallelism: []string{"join=2"}}
	if err := o.setParallelisms(job); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"orders-source": 3, "payments-source": 2, "parse-orders": 3, "parse-payments": 2, "join": 2, "sink": 3} {
		if got := job.Op(name).Parallelism; got != want {
			t.Errorf("%s: parallelism %d, want %d", name, got, want)
		}
	}
}
