package runtime

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"faultline/runtime/spec"
)

// FaultKind is an entry of the fault catalogue.
type FaultKind string

const (
	// FaultPanic makes the task panic inside its operator.
	FaultPanic FaultKind = "panic"
	// FaultError makes the task's operator return an error.
	FaultError FaultKind = "error"
	// FaultSavepoint triggers a savepoint (it needs no task).
	FaultSavepoint FaultKind = "savepoint"
	// FaultSlow makes the task process Factor times slower for For.
	FaultSlow FaultKind = "slow"
	// FaultCrash kills the whole process, as SIGKILL does.
	FaultCrash FaultKind = "crash"
	// FaultStorageFail makes the next Count checkpoint writes fail.
	FaultStorageFail FaultKind = "storage-fail"
	// FaultCorruptCheckpoint damages the newest retained checkpoint's state
	// so that the next recovery falls back to an older one.
	FaultCorruptCheckpoint FaultKind = "corrupt-checkpoint"
	// FaultPoison writes a record that can never be parsed into an input
	// topic (Topic, Partition).
	FaultPoison FaultKind = "poison"
	// FaultBrokerDown makes the embedded broker refuse connections for For.
	FaultBrokerDown FaultKind = "broker-down"
)

var faultKinds = map[FaultKind]string{
	FaultPanic:             "the task panics",
	FaultError:             "the task's operator returns an error",
	FaultSavepoint:         "a savepoint is taken",
	FaultSlow:              "the task runs factor= times slower for for=",
	FaultCrash:             "the process dies as with SIGKILL",
	FaultStorageFail:       "the next count= checkpoint writes fail",
	FaultCorruptCheckpoint: "the newest checkpoint's state is damaged",
	FaultPoison:            "a record that can never be parsed is written into topic= (orders) partition= (0)",
	FaultBrokerDown:        "the embedded broker refuses connections for for= (5s)",
}

// JobLevel reports whether the fault acts on the job rather than a task.
func (k FaultKind) JobLevel() bool {
	switch k {
	case FaultSavepoint, FaultCrash, FaultStorageFail, FaultCorruptCheckpoint, FaultPoison, FaultBrokerDown:
		return true
	}
	return false
}

// Fault is one injection: what, where and when. It is the one entry point
// for faults: --inject in headless runs, and later the keyboard.
type Fault struct {
	Kind FaultKind
	Task string // "operator/index"
	// After is the time since the run started; AfterRecords instead fires
	// once the task has processed that many records (over all attempts),
	// which keeps short bounded runs deterministic. Neither set: now.
	After        time.Duration
	AfterRecords int64
	// Count is how many checkpoint writes a storage-fail fault fails.
	Count int
	// Factor and For shape a slow fault; For is also how long a
	// broker-down fault lasts.
	Factor float64
	For    time.Duration
	// Topic and Partition are where a poison fault writes its record.
	Topic     string
	Partition int32
	Spec      string // as the user wrote it
}

func (f Fault) String() string { return f.Spec }

// ErrInjected is the error an injected fault makes a task fail with.
var ErrInjected = errors.New("injected fault")

// ParseFault reads an --inject value such as
// "after=3s,task=join/1,fault=panic" or "after-records=20000,task=join/1,fault=panic".
func ParseFault(s string) (Fault, error) {
	f := Fault{Spec: s}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return f, fmt.Errorf("--inject %q: %q is not key=value (keys: after, after-records, task, fault)", s, part)
		}
		if seen[k] {
			return f, fmt.Errorf("--inject %q: %s given twice", s, k)
		}
		seen[k] = true
		switch k {
		case "after":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return f, fmt.Errorf("--inject %q: after=%s is not a duration like 3s or 500ms", s, v)
			}
			f.After = d
		case "after-records":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return f, fmt.Errorf("--inject %q: after-records=%s is not a whole number", s, v)
			}
			f.AfterRecords = n
		case "task":
			f.Task = v
		case "factor":
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || x < 1 || x > 1000 {
				return f, fmt.Errorf("--inject %q: factor=%s is not a number from 1 to 1000", s, v)
			}
			f.Factor = x
		case "for":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return f, fmt.Errorf("--inject %q: for=%s is not a duration like 3s", s, v)
			}
			f.For = d
		case "topic":
			if v != TopicOrders && v != TopicPayments {
				return f, fmt.Errorf("--inject %q: topic=%s: want orders or payments", s, v)
			}
			f.Topic = v
		case "partition":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n >= GeneratorPartitions {
				return f, fmt.Errorf("--inject %q: partition=%s: want 0 to %d", s, v, GeneratorPartitions-1)
			}
			f.Partition = int32(n)
		case "count":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return f, fmt.Errorf("--inject %q: count=%s is not a whole number of 1 or more", s, v)
			}
			f.Count = n
		case "fault":
			f.Kind = FaultKind(v)
			if _, ok := faultKinds[f.Kind]; !ok {
				return f, fmt.Errorf("--inject %q: unknown fault %q (known: %s)", s, v, knownFaults())
			}
		default:
			return f, fmt.Errorf("--inject %q: unknown key %q (keys: after, after-records, task, fault, count, factor, for, topic, partition)", s, k)
		}
	}
	if seen["after"] && seen["after-records"] {
		return f, fmt.Errorf("--inject %q: give after= or after-records=, not both", s)
	}
	if f.Kind == "" {
		return f, fmt.Errorf("--inject %q: fault= is missing (known: %s)", s, knownFaults())
	}
	if seen["count"] && f.Kind != FaultStorageFail {
		return f, fmt.Errorf("--inject %q: count= goes with fault=storage-fail", s)
	}
	if f.Kind == FaultStorageFail && f.Count == 0 {
		f.Count = 1
	}
	if seen["factor"] && f.Kind != FaultSlow {
		return f, fmt.Errorf("--inject %q: factor= goes with fault=slow", s)
	}
	if seen["for"] && f.Kind != FaultSlow && f.Kind != FaultBrokerDown {
		return f, fmt.Errorf("--inject %q: for= goes with fault=slow or fault=broker-down", s)
	}
	if (seen["topic"] || seen["partition"]) && f.Kind != FaultPoison {
		return f, fmt.Errorf("--inject %q: topic= and partition= go with fault=poison", s)
	}
	if f.Kind == FaultPoison && f.Topic == "" {
		f.Topic = TopicOrders
	}
	if f.Kind == FaultBrokerDown && f.For == 0 {
		f.For = 5 * time.Second
	}
	if f.Kind == FaultSlow {
		if f.Factor == 0 {
			f.Factor = 10
		}
		if f.For == 0 {
			f.For = 5 * time.Second
		}
	}
	if f.Kind.JobLevel() {
		if f.Task != "" {
			return f, fmt.Errorf("--inject %q: fault=%s acts on the whole job; leave out task=", s, f.Kind)
		}
		if f.AfterRecords > 0 {
			return f, fmt.Errorf("--inject %q: fault=%s takes after=, not after-records=", s, f.Kind)
		}
		return f, nil
	}
	if f.Task == "" {
		return f, fmt.Errorf("--inject %q: task= is missing (e.g. task=join/1)", s)
	}
	return f, nil
}

func knownFaults() string {
	var ks []string
	for k := range faultKinds {
		ks = append(ks, string(k))
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// CheckFaultTask verifies that the fault's task exists in job.
func CheckFaultTask(f Fault, job *spec.Job) error {
	if f.Kind.JobLevel() {
		return nil
	}
	name, idx, ok := strings.Cut(f.Task, "/")
	op := job.Op(name)
	if op == nil {
		var names []string
		for _, o := range job.Operators {
			names = append(names, o.Name)
		}
		return fmt.Errorf("--inject %q: the job has no operator %q (operators: %s)", f.Spec, name, strings.Join(names, ", "))
	}
	i, err := strconv.Atoi(idx)
	if !ok || err != nil || i < 0 || i >= op.Parallelism {
		return fmt.Errorf("--inject %q: task must be %s/0 to %s/%d", f.Spec, name, name, op.Parallelism-1)
	}
	return nil
}
