package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/faultline-dev/faultline/internal/flinkconf"
)

// applyConfig sets run's flags from --config, the environment and -D, each
// where nothing stronger set it (a flag on the command line is strongest),
// and spells Flink's names of values as the flags read them. It returns
// where each value set so came from, by flag.
func applyConfig(f *pflag.FlagSet, file string, defines []string, lookupEnv func(string) (string, bool)) (map[string]flinkconf.Entry, error) {
	all := settings(f)
	byKey := map[string]setting{}
	from := map[string]flinkconf.Entry{}
	for _, s := range all {
		byKey[s.key] = s
		if s.flag.Changed {
			from[s.flag.Name] = flinkconf.Entry{Key: s.key, Value: s.flag.Value.String(), Source: flinkconf.Flag, Where: "--" + s.flag.Name}
		}
	}
	entries, err := configLayers(file, defines, lookupEnv, all)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		s := byKey[e.Key]
		if from[s.flag.Name].Source == flinkconf.Flag {
			continue
		}
		v, err := flagValue(s, e.Value)
		if err == nil && !(v == s.flag.Value.String() && !s.flag.Changed) {
			err = setFlag(f, s.flag, v) // what holds already stays unset (--rate's -1)
		}
		if err != nil {
			return nil, usagef("%s: %s=%s: %v", e.Where, e.Key, e.Value, err)
		}
		from[s.flag.Name] = e
	}
	for flag := range spellings {
		if fl := f.Lookup(flag); fl != nil {
			if c := canonical(flag, fl.Value.String()); c != fl.Value.String() {
				if err := fl.Value.Set(c); err != nil {
					return nil, usagef("--%s %s: %v", flag, fl.Value, err)
				}
			}
		}
	}
	return from, nil
}

// namedAsGiven is err, a usage error that names a flag, saying which
// setting of the configuration gave that flag its value, when one did.
func namedAsGiven(err error, from map[string]flinkconf.Entry) error {
	var ue usageError
	if !errors.As(err, &ue) {
		return err
	}
	msg := err.Error()
	for flag, e := range from {
		if e.Source != flinkconf.Flag && strings.HasPrefix(msg, "--"+flag+" ") {
			return usagef("%s (%s: %s=%s)", msg, e.Where, e.Key, e.Value)
		}
	}
	return err
}

// setFlag gives fl the value v as if it were on the command line; a list
// takes v, comma-separated, in place of what it held.
func setFlag(f *pflag.FlagSet, fl *pflag.Flag, v string) error {
	if sv, ok := fl.Value.(pflag.SliceValue); ok {
		var items []string
		if v != "" {
			items = strings.Split(v, ",")
		}
		if err := sv.Replace(items); err != nil {
			return err
		}
		fl.Changed = true
		return nil
	}
	return f.Set(fl.Name, v)
}

// printConfig prints run's configuration as Flink keys in config.yaml's
// flat form, each value with where it came from; --config reads it back.
func printConfig(w io.Writer, f *pflag.FlagSet, from map[string]flinkconf.Entry) {
	fmt.Fprintln(w, "# faultline run's configuration, as Flink keys (faultline.<flag> where Flink has none).")
	fmt.Fprintln(w, "# Strongest first: flag, -D key=value, FAULTLINE_<FLAG>, --config FILE, default. --config reads this back.")
	for _, s := range settings(f) {
		src := "default"
		if e, ok := from[s.flag.Name]; ok {
			src = e.Source.String()
			if e.Source == flinkconf.File || e.Source == flinkconf.Env {
				src += ": " + e.Where
			}
		}
		if note, ok := differences[s.key]; ok && src == "default" {
			src += " (" + note + ")"
		}
		fmt.Fprintf(w, "%s: %s  # %s\n", s.key, yamlValue(s.flag), src)
	}
}

// differences are where faultline's default is not Flink's, and why.
var differences = map[string]string{
	"restart-strategy.type":                  "Flink 2.x: exponential-delay when checkpointing is on; fixed-delay keeps a demo's restarts evenly spaced",
	"restart-strategy.fixed-delay.attempts":  "Flink: 1 when fixed-delay is set without it",
	"execution.checkpointing.interval":       "Flink: none, checkpointing off",
	"execution.checkpointing.num-retained":   "Flink: 1",
	"jobmanager.execution.failover-strategy": "Flink: region",
	"parallelism.default":                    "0: the job spec's parallelism of each operator, 1 where it gives none",
	"sink.transactional-id-prefix":           "empty: faultline-<job>",
}

// yamlValue is fl's value as config.yaml writes it: a duration in Flink's
// spelling, a list comma-separated, a string quoted when YAML would read
// it otherwise.
func yamlValue(fl *pflag.Flag) string {
	var v string
	switch val := fl.Value.(type) {
	case pflag.SliceValue:
		v = strings.Join(val.GetSlice(), ",")
	default:
		v = fl.Value.String()
		if fl.Value.Type() == "duration" {
			if d, err := time.ParseDuration(v); err == nil {
				return flinkconf.FormatDuration(d)
			}
		}
	}
	if v == "" || strings.ContainsAny(v, ":#{}[],&*?|<>=!%@`\"'") || strings.TrimSpace(v) != v ||
		(fl.Value.Type() == "string" && (v == "true" || v == "false" || v == "null" || isNumber(v))) {
		return strconv.Quote(v)
	}
	return v
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}
