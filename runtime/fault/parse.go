package fault

// The spelled form of a fault: comma-separated key=value pairs, as
// --inject and tours write them.

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SpecError is a spelled fault that cannot be read or does not fit the
// job: Spec as written, and what is wrong with it. Whoever took the spec
// from the user says where it came from (the command line: "--inject").
type SpecError struct {
	Spec string
	Want string
}

func (e *SpecError) Error() string { return fmt.Sprintf("%q: %s", e.Spec, e.Want) }

// keys are the keys of the spelled form, each with how it reads its value
// into the fault.
var keys = []struct {
	name string
	read func(f *Fault, v string) string // what is wrong with v ("": nothing)
}{
	{"after", func(f *Fault, v string) string {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return "after=" + v + " is not a duration like 3s or 500ms"
		}
		f.After = d
		return ""
	}},
	{"after-records", func(f *Fault, v string) string {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return "after-records=" + v + " is not a whole number"
		}
		f.AfterRecords = n
		return ""
	}},
	{"after-checkpoints", func(f *Fault, v string) string {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return "after-checkpoints=" + v + " is not a whole number of 1 or more"
		}
		f.AfterCheckpoints = n
		return ""
	}},
	{"task", func(f *Fault, v string) string { f.Task = v; return "" }},
	{"fault", func(f *Fault, v string) string {
		f.Kind = Kind(v)
		if !Known(f.Kind) {
			return fmt.Sprintf("unknown fault %q (known: %s)", v, knownKinds())
		}
		return ""
	}},
	{"count", func(f *Fault, v string) string {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return "count=" + v + " is not a whole number of 1 or more"
		}
		f.Count = n
		return ""
	}},
	{"factor", func(f *Fault, v string) string {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || x < 1 || x > 1000 {
			return "factor=" + v + " is not a number from 1 to 1000"
		}
		f.Factor = x
		return ""
	}},
	{"for", func(f *Fault, v string) string {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return "for=" + v + " is not a duration like 3s"
		}
		f.For = d
		return ""
	}},
	{"topic", func(f *Fault, v string) string { f.Topic = v; return "" }},
	{"partition", func(f *Fault, v string) string {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return "partition=" + v + " is not a whole number"
		}
		f.Partition = int32(n)
		return ""
	}},
}

func keyNames() string {
	var ns []string
	for _, k := range keys {
		ns = append(ns, k.name)
	}
	return strings.Join(ns, ", ")
}

// Parse reads a spelled fault such as "after=3s,task=join/1,fault=panic"
// or "after-records=20000,task=join/1,fault=panic". An error is a
// *SpecError. Whether the task and the topic are the job's is for the job
// to check.
func Parse(s string) (Fault, error) {
	f := Fault{Spec: s}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return f, &SpecError{s, fmt.Sprintf("%q is not key=value (keys: %s)", part, keyNames())}
		}
		if seen[k] {
			return f, &SpecError{s, k + " given twice"}
		}
		seen[k] = true
		if want := readKey(&f, k, v); want != "" {
			return f, &SpecError{s, want}
		}
	}
	if want := fits(f, seen); want != "" {
		return f, &SpecError{s, want}
	}
	withDefaults(&f)
	return f, nil
}

// readKey reads key k's value v into f, and says what is wrong.
func readKey(f *Fault, k, v string) string {
	for _, key := range keys {
		if key.name == k {
			return key.read(f, v)
		}
	}
	return fmt.Sprintf("unknown key %q (keys: %s)", k, keyNames())
}

// fits says what is wrong with the keys given (seen) together.
func fits(f Fault, seen map[string]bool) string {
	only := func(key string, kinds ...Kind) bool {
		if !seen[key] {
			return true
		}
		for _, k := range kinds {
			if f.Kind == k {
				return true
			}
		}
		return false
	}
	switch {
	case seen["after-records"] && (seen["after"] || seen["after-checkpoints"]):
		return "after-records= goes with neither after= nor after-checkpoints="
	case f.Kind == "":
		return "fault= is missing (known: " + knownKinds() + ")"
	case !only("count", StorageFail):
		return "count= goes with fault=storage-fail"
	case !only("factor", Slow):
		return "factor= goes with fault=slow"
	case !only("for", Slow, BrokerDown):
		return "for= goes with fault=slow or fault=broker-down"
	case !only("topic", Poison) || !only("partition", Poison):
		return "topic= and partition= go with fault=poison"
	case f.Kind.JobLevel() && f.Task != "":
		return fmt.Sprintf("fault=%s acts on the whole job; leave out task=", f.Kind)
	case f.Kind.JobLevel() && f.AfterRecords > 0:
		return fmt.Sprintf("fault=%s takes after=, not after-records=", f.Kind)
	case !f.Kind.JobLevel() && f.Task == "":
		return "task= is missing (e.g. task=join/1)"
	}
	return ""
}

// withDefaults fills in what the kind needs and the spec left out.
func withDefaults(f *Fault) {
	switch f.Kind {
	case StorageFail:
		if f.Count == 0 {
			f.Count = 1
		}
	case BrokerDown:
		if f.For == 0 {
			f.For = 5 * time.Second
		}
	case Slow:
		if f.Factor == 0 {
			f.Factor = 10
		}
		if f.For == 0 {
			f.For = 5 * time.Second
		}
	}
}
