// Package fault is the fault catalogue: the faults a person can inject
// (from --inject, the UI's fault menu, a tour or a soak), what each does,
// and their spelled form ("after=3s,task=join/1,fault=panic"). It is plain
// data and imports nothing of faultline: the engine fires the faults, the
// command line and the UI name them.
package fault

import (
	"sort"
	"strings"
	"time"
)

// Kind is an entry of the fault catalogue.
type Kind string

const (
	// Panic makes the task panic inside its operator.
	Panic Kind = "panic"
	// Error makes the task's operator return an error.
	Error Kind = "error"
	// Savepoint triggers a savepoint (it needs no task).
	Savepoint Kind = "savepoint"
	// Slow makes the task handle 1/Factor of the records per second it
	// handled when the fault began, for For.
	Slow Kind = "slow"
	// Crash kills the whole process, as SIGKILL does.
	Crash Kind = "crash"
	// StorageFail makes the next Count checkpoint writes fail.
	StorageFail Kind = "storage-fail"
	// CorruptCheckpoint damages the newest retained checkpoint's state so
	// that the next recovery falls back to an older one.
	CorruptCheckpoint Kind = "corrupt-checkpoint"
	// Poison writes a record that can never be parsed into an input topic
	// (Topic, Partition).
	Poison Kind = "poison"
	// BrokerDown makes the embedded broker refuse connections for For.
	BrokerDown Kind = "broker-down"
)

// Entry is one fault of the catalogue that --inject, the UI's fault menu
// and the chaos soak all draw from.
type Entry struct {
	Kind Kind
	// Inject says what the fault does with its spelled parameters.
	Inject string
	// Menu says what it does with the UI's defaults (Menu).
	Menu string
}

// Catalogue is the fault catalogue in the order the UI's menu lists it.
var Catalogue = []Entry{
	{Panic, "the task panics", "the task panics"},
	{Error, "the task's operator returns an error", "the task's operator returns an error"},
	{Slow, "the task holds each record, handling 1/factor= of its rate, for for=", "the task falls to a tenth of its rate for 30 s"},
	{Poison, "a record that can never be parsed is written into topic= (the job's first input) partition= (0)", "a record no parser accepts enters the input it reads"},
	{BrokerDown, "the embedded broker refuses connections for for= (5s)", "the embedded broker refuses connections for 5 s"},
	{StorageFail, "the next count= checkpoint writes fail", "the next 3 checkpoint writes fail"},
	{CorruptCheckpoint, "the newest checkpoint's state is damaged", "the newest checkpoint's state is damaged on disk"},
	{Savepoint, "a savepoint is taken", "a savepoint is taken"},
	{Crash, "the process dies as with SIGKILL", "the process dies as with SIGKILL (start faultline again to resume)"},
}

// Known reports whether k is a fault of the catalogue.
func Known(k Kind) bool {
	for _, e := range Catalogue {
		if e.Kind == k {
			return true
		}
	}
	return false
}

// knownKinds lists the catalogue's kinds, sorted, for messages.
func knownKinds() string {
	var ks []string
	for _, e := range Catalogue {
		ks = append(ks, string(e.Kind))
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// JobLevel reports whether the fault acts on the job rather than a task.
func (k Kind) JobLevel() bool {
	switch k {
	case Savepoint, Crash, StorageFail, CorruptCheckpoint, Poison, BrokerDown:
		return true
	}
	return false
}

// Fault is one injection: what, where and when.
type Fault struct {
	Kind Kind
	Task string // "operator/index"
	// After is the time since the run started; AfterRecords instead fires
	// once the task has processed that many records (over all attempts),
	// which keeps short bounded runs deterministic. Neither set: now.
	After        time.Duration
	AfterRecords int64
	// AfterCheckpoints instead fires once that many checkpoints have
	// completed in this run, counted from After on when both are given
	// ("after=3s,after-checkpoints=1": right after the first checkpoint
	// that completes 3 s into the run).
	AfterCheckpoints int64
	// Count is how many checkpoint writes a storage-fail fault fails.
	Count int
	// Factor and For shape a slow fault; For is also how long a
	// broker-down fault lasts.
	Factor float64
	For    time.Duration
	// Topic and Partition are where a poison fault writes its record
	// (Topic "": the job's first input).
	Topic     string
	Partition int32
	Spec      string // as the user wrote it
}

func (f Fault) String() string { return f.Spec }

// Menu is the fault of kind with the defaults the UI's menu promises
// (Entry.Menu; a test holds the two together), aimed at task (ignored for
// faults of the whole job): slow 10× for 30 s, storage-fail the next 3
// writes, broker-down 5 s; poison goes to topic and partition.
func Menu(kind Kind, task, topic string, partition int32) Fault {
	f := Fault{Kind: kind, Task: task}
	switch kind {
	case Slow:
		f.Factor, f.For = 10, 30*time.Second
	case StorageFail:
		f.Count = 3
	case BrokerDown:
		f.For = 5 * time.Second
	case Poison:
		f.Topic, f.Partition = topic, partition
	}
	if kind.JobLevel() {
		f.Task = ""
	}
	return f
}
