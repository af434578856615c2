package cli

// `faultline run` takes its settings as Flink does: by flag, as -D
// key=value, from FAULTLINE_* environment variables and from a Flink 2.x
// config.yaml (--config), in that order of strength, under Flink's own
// keys where Flink has one and faultline.<flag> where it has none.

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/internal/flinkconf"
	"github.com/faultline-dev/faultline/internal/smallfile"
	"github.com/faultline-dev/faultline/restart"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/kafka/sink"
	"github.com/faultline-dev/faultline/runtime/kafka/source"
)

// flinkKeys are the settings Flink has a key for, and the flag each sets.
var flinkKeys = []struct{ key, flag string }{
	{checkpoint.KeyInterval, "checkpoint-interval"},
	{"execution.checkpointing.mode", "mode"},
	{checkpoint.KeyTimeout, "checkpoint-timeout"},
	{checkpoint.KeyMinPause, "min-pause"},
	{checkpoint.KeyMaxConcurrent, "max-concurrent-checkpoints"},
	{checkpoint.KeyTolerableFailures, "tolerable-failed-checkpoints"},
	{"execution.checkpointing.unaligned.enabled", "unaligned"},
	{"execution.checkpointing.aligned-checkpoint-timeout", "aligned-checkpoint-timeout"},
	{"execution.checkpointing.incremental", "incremental"},
	{"execution.checkpointing.num-retained", "retained-checkpoints"},
	{runtime.KeyStateBackend, "state-backend"},
	{"state.checkpoint-storage", "checkpoint-storage"},
	{restart.KeyStrategy, "restart-strategy"},
	{restart.KeyAttempts, "restart-attempts"},
	{restart.KeyDelay, "restart-delay"},
	{restart.KeyMaxFailures, "failure-rate-max-failures"},
	{restart.KeyFailureRateInterval, "failure-rate-interval"},
	{restart.KeyFailureRateDelay, "failure-rate-delay"},
	{restart.KeyInitialBackoff, "backoff-initial"},
	{restart.KeyMaxBackoff, "backoff-max"},
	{restart.KeyMultiplier, "backoff-multiplier"},
	{restart.KeyJitter, "backoff-jitter"},
	{restart.KeyResetThreshold, "backoff-reset-threshold"},
	{restart.KeyAttemptsBeforeReset, "backoff-attempts-before-reset"},
	{restart.KeyFailover, "failover-strategy"},
	{"parallelism.default", "default-parallelism"},
	{source.KeyStartup, "startup"},
	{sink.KeyGuarantee, "sink-guarantee"},
	{"sink.transactional-id-prefix", "txn-prefix"},
}

// oldKeys are keys Flink has renamed, read as the new ones.
var oldKeys = map[string]string{
	runtime.KeyIncremental: "execution.checkpointing.incremental", // state.backend.incremental
}

// spellings are Flink's names of values that faultline spells otherwise,
// by flag; values are read without regard to case or to _ against -.
var spellings = map[string]map[string]string{
	"mode":             {},
	"state-backend":    {"hashmap": "heap"},
	"restart-strategy": {"off": "none", "disable": "none", "fixeddelay": "fixed-delay", "failurerate": "failure-rate", "exponentialdelay": "exponential-delay"},
	"startup":          {"earliest-offset": "earliest", "latest-offset": "latest", "group-offsets": "committed"},
	"sink-guarantee":   {},
}

// notSettings are run's flags that are no setting of the job: the actions
// of one run (what to start from, faults), the configuration's own, and
// the SASL password.
var notSettings = map[string]bool{
	"help": true, "config": true, "define": true, "print-config": true,
	"fresh": true, "resume": true, "from-savepoint": true, "allow-fresh-start": true,
	"allow-non-restored-state": true, "inject": true,
	"sasl-password": true, // a secret, never printed: $FAULTLINE_SASL_PASSWORD
}

// setting is one key of the configuration and the flag it sets.
type setting struct {
	key  string
	flag *pflag.Flag
}

// settings are every key run takes, Flink's first, in the order printed.
func settings(f *pflag.FlagSet) []setting {
	var out []setting
	named := map[string]bool{}
	for _, k := range flinkKeys {
		out = append(out, setting{k.key, f.Lookup(k.flag)})
		named[k.flag] = true
	}
	var rest []setting
	f.VisitAll(func(fl *pflag.Flag) {
		if !named[fl.Name] && !notSettings[fl.Name] {
			rest = append(rest, setting{"faultline." + fl.Name, fl})
		}
	})
	sort.Slice(rest, func(i, j int) bool { return rest[i].key < rest[j].key })
	return append(out, rest...)
}

// configOf is the run's settings by Flink's keys, the faultline.<flag>
// ones left out: the job's configuration its REST API tells
// (jobmanager/config), as config.yaml writes the values.
func configOf(f *pflag.FlagSet) map[string]string {
	out := map[string]string{}
	for _, s := range settings(f) {
		if s.flag != nil && !strings.HasPrefix(s.key, "faultline.") {
			out[s.key] = strings.Trim(yamlValue(s.flag), `"'`)
		}
	}
	return out
}

// envName is the environment variable of a flag: FAULTLINE_ and its name
// in capitals, - as _.
func envName(flag string) string {
	return "FAULTLINE_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// configLayers reads the config file, the environment and the -D
// definitions, weakest first, and checks that each names a key run has.
func configLayers(file string, defines []string, lookupEnv func(string) (string, bool), all []setting) ([]flinkconf.Entry, error) {
	known := map[string]bool{}
	var keys []string
	for _, s := range all {
		known[s.key] = true
		keys = append(keys, s.key)
	}
	var entries []flinkconf.Entry
	if file != "" {
		data, err := smallfile.Read(file, "config file", 1<<20)
		if err != nil {
			return nil, usagef("--config: %v", err)
		}
		fromFile, err := flinkconf.ParseFile(file, data)
		if err != nil {
			return nil, usagef("--config: %v", err)
		}
		entries = append(entries, fromFile...)
	}
	for _, s := range all {
		if v, ok := lookupEnv(envName(s.flag.Name)); ok {
			entries = append(entries, flinkconf.Entry{Key: s.key, Value: v, Source: flinkconf.Env, Where: envName(s.flag.Name)})
		}
	}
	for _, d := range defines {
		e, err := flinkconf.ParseDefine(d)
		if err != nil {
			return nil, usagef("%v", err)
		}
		entries = append(entries, e)
	}
	for i, e := range entries {
		if renamed, ok := oldKeys[e.Key]; ok {
			entries[i].Key = renamed
			continue
		}
		if !known[e.Key] {
			msg := fmt.Sprintf("%s: unknown configuration key %q", e.Where, e.Key)
			if near := flinkconf.Nearest(e.Key, keys); near != "" {
				msg += fmt.Sprintf(": did you mean %s?", near)
			}
			return nil, usagef("%s (faultline run --print-config lists every key)", msg)
		}
	}
	return entries, nil
}

// flagValue is value, given for s as Flink writes it, as s's flag reads
// it: a duration in Flink's spelling, a value by Flink's name.
func flagValue(s setting, value string) (string, error) {
	switch s.flag.Value.Type() {
	case "duration":
		d, err := flinkconf.Duration(value)
		if err != nil {
			return "", err
		}
		return d.String(), nil
	case "bool":
		return strings.ToLower(value), nil
	}
	return canonical(s.flag.Name, value), nil
}

// canonical is value of flag by faultline's name when Flink names it
// otherwise (hashmap is heap, earliest-offset earliest, EXACTLY_ONCE
// exactly-once).
func canonical(flag, value string) string {
	names, ok := spellings[flag]
	if !ok {
		return value
	}
	v := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(value)), "_", "-")
	if to, ok := names[v]; ok {
		return to
	}
	if to, ok := names[strings.ReplaceAll(v, "-", "")]; ok {
		return to
	}
	return v
}
