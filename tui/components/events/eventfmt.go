package events

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"
)

// describeEvent turns a lifecycle event into a sentence a trainer can read
// aloud, with its level. Events without a sentence of their own read
// "name k=v …". task_status events are not described here: the event log
// folds them (see eventLog.add).
func describeEvent(e view.Event) (string, common.Level) {
	for _, describe := range eventFamilies {
		if text, lvl, ok := describe(e); ok {
			return text, lvl
		}
	}
	return genericEvent(e), common.LevelMuted
}

// eventFamilies describe the events that have a sentence of their own, one
// family of events each.
var eventFamilies = []func(view.Event) (string, common.Level, bool){
	describeRunEvent,
	describeCheckpointEvent,
	describeFailureEvent,
	describeRecoveryEvent,
	describeFaultEvent,
	describeControlEvent,
}

// describeRunEvent describes the run's start, its broker, its input and the
// status of the job and its subtasks, and reports whether e is one of them.
func describeRunEvent(e view.Event) (string, common.Level, bool) {
	switch e := e.(type) {
	case view.RunStarted:
		parts := []string{"run started: job " + e.Job}
		if e.Mode != "" {
			parts = append(parts, e.Mode)
		}
		if e.CheckpointIntervalMs > 0 {
			parts = append(parts, "checkpoints every "+common.HumanDuration(time.Duration(e.CheckpointIntervalMs)*time.Millisecond))
		}
		if e.Brokers != "" {
			parts = append(parts, "brokers "+e.Brokers)
		}
		if e.StateDir != "" {
			parts = append(parts, "state in "+e.StateDir)
		}
		return strings.Join(parts, ", "), common.LevelInfo, true

	case view.Notice:
		if e.Advice != "" {
			return e.Text + ": " + e.Advice, common.LevelWarning, true
		}
		return e.Text, common.LevelInfo, true

	case view.BrokerStarted:
		text := "Kafka broker at " + e.Address
		if e.Embedded {
			text = "embedded Kafka broker listening on " + e.Address
		}
		if e.Note != "" {
			text += " (" + e.Note + ")"
		}
		return text, common.LevelInfo, true

	case view.JobStatus:
		text := "job " + e.Status
		if e.Reason != "" {
			text += ": " + e.Reason
		}
		switch view.JobState(e.Status) {
		case view.JobFailed:
			return text, common.LevelError, true
		case view.JobRestarting, view.JobFailing:
			return text, common.LevelWarning, true
		case view.JobRunning, view.JobFinished:
			return text, common.LevelSuccess, true
		}
		return text, common.LevelMuted, true

	case view.TaskStatus:
		text := e.Task + " " + e.Status
		if e.Reason != "" {
			text += ": " + e.Reason
		}
		if e.Status == "FAILED" {
			return text, common.LevelError, true
		}
		return text, common.LevelMuted, true

	case view.InputWriterFailed:
		return "the input writer stopped: " + e.Error, common.LevelError, true

	case view.InputWritten:
		return "input written: " + common.Thousands(e.Records) + " records in " + common.HumanDuration(time.Duration(e.DurationMs)*time.Millisecond), common.LevelMuted, true
	}
	return "", 0, false
}

// describeCheckpointEvent describes a checkpoint or savepoint triggered,
// completed or failed, and reports whether e is one of them.
func describeCheckpointEvent(e view.Event) (string, common.Level, bool) {
	switch e := e.(type) {
	case view.CheckpointTriggered:
		return kindName(e.Kind) + " " + id(e.ID) + " triggered: barriers injected at the sources", common.LevelInfo, true

	case view.CheckpointCompleted:
		// Unaligned, it says so early, where a narrow line still shows it,
		// and what it stored of the records in flight.
		dur := common.HumanDuration(time.Duration(e.DurationMs) * time.Millisecond)
		if note := common.FrozenNote(time.Duration(e.FrozenMs) * time.Millisecond); note != "" {
			dur += " (+" + note + ")"
		}
		took := " completed in " + dur
		switch {
		case len(e.TimedOut) > 0:
			took += ", timed out → unaligned at " + strings.Join(e.TimedOut, " ")
		case e.Unaligned:
			took = " completed unaligned in " + dur
		}
		text := kindName(e.Kind) + " " + id(e.ID) + took + ": " + common.HumanBytes(e.SizeBytes)
		if e.IncrementalBytes != e.SizeBytes {
			text += " (" + common.HumanBytes(e.IncrementalBytes) + " incremental)"
		}
		if e.Unaligned || len(e.TimedOut) > 0 {
			text += "; " + common.HumanBytes(e.PersistedInFlightBytes) + " of in-flight data persisted"
		}
		if e.AfterBarrier > 0 {
			text += "; " + common.Plural(int(e.AfterBarrier), "record", "records") +
				" processed after the barrier over its subtasks, read again after a restore from it"
		}
		return text, common.LevelSuccess, true

	case view.CheckpointFailed:
		text := "checkpoint " + id(e.ID) + " failed"
		switch {
		case e.Reason == "declined" && e.Task != "":
			text += ": declined by " + e.Task
		case e.Task != "":
			text += ": " + e.Reason + " (" + e.Task + ")"
		case e.Reason != "":
			text += ": " + e.Reason
		}
		if e.Error != "" {
			// The error often starts with the reason already.
			text = strings.TrimSuffix(text, ": "+e.Reason) + ": " + e.Error
		}
		switch e.Reason {
		case "subsumed":
			return text, common.LevelMuted, true
		case "job failover":
			return text, common.LevelWarning, true
		}
		return text, common.LevelError, true

	case view.SavepointCompleted:
		text := "savepoint " + id(e.ID) + " written: " + common.HumanBytes(e.SizeBytes)
		if e.Path != "" {
			text += " in " + e.Path
		}
		return text, common.LevelSuccess, true

	case view.SavepointFailed:
		text := "savepoint failed"
		if e.ID != nil {
			text = "savepoint " + id(*e.ID) + " failed"
		}
		if e.Error != "" {
			text += ": " + e.Error
		}
		return text, common.LevelError, true
	}
	return "", 0, false
}

// describeFailureEvent describes a failure and the restart or failover that
// follows it, and reports whether e is one of them.
func describeFailureEvent(e view.Event) (string, common.Level, bool) {
	switch e := e.(type) {
	case view.TaskFailed:
		who := e.Task
		if who == "" {
			who = "the job"
		}
		text := who + " failed"
		if e.Error != "" {
			text += ": " + e.Error
		} else if e.Fault != "" {
			text += ": injected " + e.Fault
		}
		if e.Attempt > 0 {
			text += " (attempt " + id(e.Attempt) + ")"
		}
		return text, common.LevelError, true

	case view.RestartScheduled:
		text := "restart " + strconv.Itoa(e.Attempt) + " scheduled in " + common.HumanDuration(time.Duration(e.DelayMs)*time.Millisecond)
		if e.Description != "" {
			text += ": " + e.Description
		} else if e.Strategy != "" {
			text += ": " + e.Strategy
		}
		return text, common.LevelWarning, true

	case view.RestartsReset:
		text := "restart attempts reset"
		if e.Strategy != "" {
			text += ": " + e.Strategy + " starts afresh, as for a new job"
		}
		if e.Attempts > 0 {
			text += " (" + common.Plural(e.Attempts, "restart", "restarts") + " granted before)"
		}
		return text, common.LevelInfo, true

	case view.Failover:
		text := "failover " + e.Strategy + ": restarting "
		if len(e.Tasks) <= 3 && len(e.Tasks) > 0 {
			text += strings.Join(e.Tasks, " ")
		} else {
			text += common.Plural(len(e.Tasks), "task", "tasks")
		}
		return text, common.LevelWarning, true
	}
	return "", 0, false
}

// describeRecoveryEvent describes a recovery (the checkpoint restored, and the
// records it holds back, loses or makes good), and reports whether e is one
// of them.
func describeRecoveryEvent(e view.Event) (string, common.Level, bool) {
	switch e := e.(type) {
	case view.Restored:
		passed := ""
		if len(e.PassedOver) > 0 {
			passed = " — " + passedOverText(e.PassedOver)
		}
		if e.Checkpoint == 0 {
			text := "restored no checkpoint" + passed + ": starting from the beginning"
			if e.Reason != "" {
				text = "restored no checkpoint" + passed + " (" + e.Reason + ")"
			}
			return text, common.LevelWarning, true
		}
		text := "restored checkpoint " + id(e.Checkpoint) + passed
		if e.Offsets != nil {
			if o := offsetsText(*e.Offsets); o != "" {
				text += ": " + o
			}
		}
		if e.Reason != "" {
			text += " (" + e.Reason + ")"
		}
		if passed != "" {
			return text, common.LevelWarning, true
		}
		return text, common.LevelSuccess, true

	case view.ReplayHeld:
		after := " committed after checkpoint " + id(e.Checkpoint)
		if e.Checkpoint == 0 {
			after = " committed by the runs before, and no checkpoint is left to start from"
		}
		return e.Task + ": the output already holds " + common.Plural(e.Records, "record", "records") + after +
			" — a committed transaction cannot be taken back; they are not written again", common.LevelWarning, true

	case view.TxnRewritten:
		return e.Task + ": the broker lost the transaction pre-committed for checkpoint " + id(e.Checkpoint) + "; " +
			common.Plural(e.Records, "record", "records") + " of it written again from its log", common.LevelWarning, true

	case view.CheckpointInvalid:
		return "checkpoint " + id(e.ID) + " cannot be restored: " + e.Error, common.LevelError, true

	case view.RecordsLost:
		text := e.Task + " lost " + common.Plural(int(e.Records), "record", "records")
		if e.Total > 0 {
			text += " (" + common.Thousands(e.Total) + " so far)"
		}
		if e.What != "" {
			return text + ": " + e.What, common.LevelError, true
		}
		return text + ": individual failover does not replay input", common.LevelError, true

	case view.RecordsReplayed:
		return "the restart of the whole job makes good " + common.Plural(int(e.Records), "record", "records") +
			" individual failover lost (" + common.Thousands(e.TotalLost) + " still lost)", common.LevelSuccess, true

	case view.RolledBack:
		return e.Task + " restarted alone from checkpoint " + id(e.Checkpoint) + ": " + e.What, common.LevelWarning, true
	}
	return "", 0, false
}

// describeFaultEvent describes an injected fault and what it did, and reports
// whether e is one of them.
func describeFaultEvent(e view.Event) (string, common.Level, bool) {
	switch e := e.(type) {
	case view.CheckpointCorrupted:
		if e.Error != "" || e.ID == nil {
			return "corrupt-checkpoint: " + e.Error, common.LevelError, true
		}
		return "checkpoint " + id(*e.ID) + "'s state damaged on purpose: the next recovery must fall back", common.LevelWarning, true

	case view.FaultInjected:
		text := "injected " + e.Fault
		if e.Task != "" {
			text += " into " + e.Task
		} else {
			text += " (job-wide)"
		}
		return text, common.LevelWarning, true

	case view.TaskSlowed:
		return e.Task + " slowed ×" + strconv.FormatFloat(e.Factor, 'f', -1, 64) +
			" for " + common.HumanDuration(time.Duration(e.ForMs)*time.Millisecond), common.LevelWarning, true

	case view.PoisonWritten:
		if e.Error != "" || e.Offset == nil {
			return "poison: " + e.Error, common.LevelError, true
		}
		return "poison record written to " + e.Topic + "/" + strconv.Itoa(int(e.Partition)) + " at offset " + id(*e.Offset) + ": no parser accepts it", common.LevelWarning, true

	case view.BadRecord:
		text := e.Task + " could not parse a record (" + e.Reason + "): " + e.Action
		if e.Topic != "" {
			text += " to " + e.Topic
		}
		return text, common.LevelWarning, true

	case view.BrokerDown:
		if e.Error != "" {
			return "broker-down: " + e.Error, common.LevelError, true
		}
		return "the embedded broker is down for " + common.HumanDuration(time.Duration(e.ForMs)*time.Millisecond) + ": every request is refused", common.LevelError, true

	case view.BrokerUp:
		return "the embedded broker is back at " + e.Address, common.LevelInfo, true
	}
	return "", 0, false
}

// describeControlEvent describes a change of the settings (the checkpointing
// mode, the tempo, the sources paused or resumed), and reports whether e is
// one of them.
func describeControlEvent(e view.Event) (string, common.Level, bool) {
	switch e := e.(type) {
	case view.ModeChanged:
		return "checkpointing mode " + e.Mode + " from the next checkpoint", common.LevelInfo, true

	case view.TempoChanged:
		switch e.Tempo {
		case "frozen":
			return "the world stands still: every task waits before its next batch (. steps, space goes on)", common.LevelWarning, true
		case "slow", "slower":
			return "slow motion (" + e.Tempo + "): every task waits before each batch, so barriers can be followed", common.LevelInfo, true
		}
		return "full speed again", common.LevelInfo, true

	case view.SourcesPaused:
		if e.Paused {
			return "sources paused: no new records enter; barriers and checkpoints go on", common.LevelWarning, true
		}
		return "sources resumed", common.LevelInfo, true
	}
	return "", 0, false
}

// genericEvent is "name k=v …" with the keys in order.
func genericEvent(e view.Event) string {
	fields, _ := view.Fields(e)
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString(e.Name())
	for _, k := range keys {
		b.WriteString(" " + k + "=" + valueText(fields[k]))
	}
	return b.String()
}

// valueText writes a field's JSON value compactly: strings unquoted
// unless they hold a space or '='.
func valueText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if strings.ContainsAny(s, " =") {
			return strconv.Quote(s)
		}
		return s
	}
	return string(raw)
}

// id writes a checkpoint id, an attempt, an offset.
func id(n int64) string { return strconv.FormatInt(n, 10) }

// kindName is "checkpoint" or "savepoint" from an event's kind.
func kindName(kind string) string {
	if kind == "savepoint" {
		return "savepoint"
	}
	return "checkpoint"
}

// passedOverText says which newer checkpoints a restore passed over,
// newest first: "checkpoint 7 is damaged, passed over", "checkpoints 8
// and 7 are damaged, passed over".
func passedOverText(ids []int64) string {
	if len(ids) == 1 {
		return "checkpoint " + id(ids[0]) + " is damaged, passed over"
	}
	parts := make([]string, len(ids))
	for i, n := range ids {
		parts[i] = id(n)
	}
	return "checkpoints " + strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1] + " are damaged, passed over"
}

// offsetsText writes restored source offsets, topic → partition → offset,
// as "orders p0:1203 p1:1180 payments p0:…".
func offsetsText(o view.Offsets) string {
	type part struct{ p, off int64 }
	names := make([]string, 0, len(o))
	for t := range o {
		names = append(names, t)
	}
	slices.Sort(names)
	var b strings.Builder
	for i, t := range names {
		var ps []part
		for p, off := range o[t] {
			if n, err := strconv.ParseInt(p, 10, 64); err == nil {
				ps = append(ps, part{n, off})
			}
		}
		slices.SortFunc(ps, func(a, b part) int { return int(a.p - b.p) })
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t)
		for _, p := range ps {
			b.WriteString(" p" + id(p.p) + ":" + id(p.off))
		}
	}
	return b.String()
}
