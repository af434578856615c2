// Package flinkconf reads configuration the way Flink 2.x writes it: a
// config.yaml of nested or flat keys, `-D key=value` definitions, and
// Flink's spelling of durations ("500 ms", "2 min"). It knows no setting:
// the command line says which keys exist and what they set.
package flinkconf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Source is where a setting's value came from, weakest first.
type Source int

// Where values come from. A stronger source wins: flag > -D > environment
// > config file > default.
const (
	Default Source = iota
	File
	Env
	Define
	Flag
)

func (s Source) String() string {
	switch s {
	case File:
		return "config file"
	case Env:
		return "environment"
	case Define:
		return "-D"
	case Flag:
		return "flag"
	}
	return "default"
}

// Entry is one key with its value, and where it was given: the file and
// line, the environment variable, or the -D definition.
type Entry struct {
	Key, Value string
	Source     Source
	Where      string
}

// ParseFile reads a Flink config.yaml: a map whose keys nest (execution:
// checkpointing: interval: 2s) or are written flat (execution.checkpointing.
// interval: 2s), or both; every leaf is a scalar. name is the file's name,
// for the entries' Where and the errors.
func ParseFile(name string, data []byte) ([]Entry, error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil // an empty file sets nothing
		}
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	var out []Entry
	if err := flatten(name, "", doc.Content[0], &out); err != nil {
		return nil, err
	}
	seen := map[string]Entry{}
	for _, e := range out {
		if first, ok := seen[e.Key]; ok {
			return nil, fmt.Errorf("%s: %s is set twice (%s and %s)", name, e.Key, first.Where, e.Where)
		}
		seen[e.Key] = e
	}
	return out, nil
}

// flatten appends the leaves of n, a map under prefix, to out.
func flatten(name, prefix string, n *yaml.Node, out *[]Entry) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("%s:%d: want a map of keys, found %s", name, n.Line, kindName(n))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		if prefix != "" {
			key = prefix + "." + key
		}
		switch v.Kind {
		case yaml.MappingNode:
			if err := flatten(name, key, v, out); err != nil {
				return err
			}
		case yaml.ScalarNode:
			*out = append(*out, Entry{Key: key, Value: v.Value, Source: File, Where: fmt.Sprintf("%s:%d", name, k.Line)})
		default:
			return fmt.Errorf("%s:%d: %s: want a single value, found %s", name, k.Line, key, kindName(v))
		}
	}
	return nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a map"
	case yaml.AliasNode:
		return "an alias"
	}
	return "a single value"
}

// ParseDefine reads one -D definition, key=value.
func ParseDefine(s string) (Entry, error) {
	key, value, ok := strings.Cut(s, "=")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		return Entry{}, fmt.Errorf("-D %q: want key=value, e.g. -D execution.checkpointing.interval=500ms", s)
	}
	return Entry{Key: key, Value: strings.TrimSpace(value), Source: Define, Where: "-D"}, nil
}

// durationUnits are the units Flink's TimeUtils reads, each with what it
// is worth.
var durationUnits = map[string]time.Duration{}

func init() {
	for unit, names := range map[time.Duration][]string{
		time.Nanosecond:  {"ns", "nano", "nanos", "nanosecond", "nanoseconds"},
		time.Microsecond: {"µs", "us", "micro", "micros", "microsecond", "microseconds"},
		time.Millisecond: {"ms", "milli", "millis", "millisecond", "milliseconds"},
		time.Second:      {"s", "sec", "secs", "second", "seconds"},
		time.Minute:      {"m", "min", "minute", "minutes"},
		time.Hour:        {"h", "hour", "hours"},
		24 * time.Hour:   {"d", "day", "days"},
	} {
		for _, n := range names {
			durationUnits[n] = unit
		}
	}
}

// Duration reads a duration as Flink writes it: a whole number and a unit
// ("500 ms", "2s", "1 min", "3 h", "1d"; no unit is milliseconds), or as
// Go writes one ("1m30s").
func Duration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	unit := strings.ToLower(strings.TrimSpace(t[i:]))
	if i > 0 {
		n, err := strconv.ParseInt(t[:i], 10, 64)
		if per, ok := durationUnits[unit]; err == nil && (ok || unit == "") {
			if unit == "" {
				per = time.Millisecond
			}
			if n > int64(1<<63-1)/int64(per) {
				return 0, fmt.Errorf("%q is too long a duration", s)
			}
			return time.Duration(n) * per, nil
		}
	}
	if d, err := time.ParseDuration(t); err == nil {
		return d, nil
	}
	return 0, fmt.Errorf("%q is no duration: want a number and a unit, e.g. 500 ms, 2 s, 1 min", s)
}

// FormatDuration writes d as Flink does, in the largest unit that holds it
// whole ("2 s", "10 min", "500 ms"), which Duration reads back.
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0 ms"
	}
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "min"}, {time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "us"}} {
		if d != 0 && d%u.d == 0 {
			return fmt.Sprintf("%d %s", d/u.d, u.name)
		}
	}
	return fmt.Sprintf("%d ns", d)
}

// Nearest is the one of known closest to key (by edit distance), when it
// is close enough to be what was meant; "" when none is.
func Nearest(key string, known []string) string {
	best, bestD := "", len(key)/2+2
	sorted := append([]string(nil), known...)
	sort.Strings(sorted)
	for _, k := range sorted {
		if d := distance(key, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
