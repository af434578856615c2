package cli

import (
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/faultline-dev/faultline/restart"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/fault"
	"github.com/faultline-dev/faultline/runtime/kafka/sink"
	"github.com/faultline-dev/faultline/runtime/kafka/source"
)

// Shell completion of flag values and arguments (faultline completion
// bash|zsh|fish|powershell writes the script): the words each flag takes,
// the -D keys, the fault specs' keys and kinds, the tours, the state
// dir's checkpoint ids.

// words completes from a fixed list.
func words(ws ...string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return ws, cobra.ShellCompDirectiveNoFileComp
	}
}

func strs[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// addRunCompletions registers the completion of run's flag values.
func addRunCompletions(cmd *cobra.Command) {
	f := cmd.Flags()
	for flag, complete := range map[string]cobra.CompletionFunc{
		"mode":               words("exactly-once", "unaligned", "at-least-once"),
		"restart-strategy":   words(restart.Names()...),
		"failover-strategy":  words(strs(restart.FailoverStrategies)...),
		"state-backend":      words("heap", "hashmap", "badger"),
		"checkpoint-storage": words("filesystem", "jobmanager"),
		"startup": words(string(source.StartEarliest), string(source.StartLatest), string(source.StartCommitted),
			"earliest-offset", "latest-offset", "group-offsets"),
		"sink-guarantee": words(string(sink.ExactlyOnce), string(sink.AtLeastOnce), string(sink.None)),
		"on-bad-record":  words(runtime.BadRecordFail, runtime.BadRecordSkip, runtime.BadRecordDeadLetter),
		"log-level":      words("debug", "info", "warn", "error"),
		"log-format":     words("text", "json"),
		"define":         defineKeys(f),
		"inject":         faultSpecs,
	} {
		if f.Lookup(flag) != nil {
			cmd.RegisterFlagCompletionFunc(flag, complete)
		}
	}
}

// defineKeys completes -D with the configuration's keys, each with its =.
func defineKeys(f *pflag.FlagSet) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		var keys []string
		for _, s := range settings(f) {
			keys = append(keys, s.key+"=")
		}
		return keys, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
	}
}

// faultSpecs completes --inject: after "fault=" the catalogue's kinds,
// else the spec's keys.
func faultSpecs(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if i := strings.LastIndex(toComplete, "fault="); i >= 0 && !strings.Contains(toComplete[i:], ",") {
		var out []string
		for _, e := range fault.Catalogue {
			out = append(out, toComplete[:i+len("fault=")]+string(e.Kind))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	head := toComplete[:strings.LastIndex(toComplete, ",")+1]
	var out []string
	for _, k := range []string{"after=", "after-records=", "after-checkpoints=", "task=", "fault="} {
		out = append(out, head+k)
	}
	return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
}

// tourNames completes tour's argument with the built-in tours.
func tourNames(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ts, err := allTours()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var out []string
	for _, t := range ts {
		out = append(out, t.Name+"\t"+t.Title)
	}
	return out, cobra.ShellCompDirectiveDefault // a FILE.yaml too
}

// checkpointIDs completes an ID argument with the state dir's checkpoints
// and savepoints (none while a run holds the store).
func checkpointIDs(f *checkpointsFlags) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		s, err := f.open(false)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer s.Close()
		all, _, err := records(s)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for _, c := range all {
			out = append(out, strconv.FormatInt(c.ID, 10)+"\t"+c.Kind.String())
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
