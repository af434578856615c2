package attach

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
)

// checkpointsOf are the checkpoint statistics as the screen shows them:
// Flink's counts and history, each checkpoint with its subtasks'
// acknowledgements where the API gave them.
func checkpointsOf(a *answers, names map[string]string) view.Checkpoints {
	c := a.Checkpoints
	if c == nil {
		return view.Checkpoints{}
	}
	out := view.Checkpoints{Completed: c.Counts.Completed, Failed: c.Counts.Failed, InProgress: c.Counts.InProgress}
	if c.Latest.Completed != nil {
		out.LastCompleted = c.Latest.Completed.ID
	}
	restored := int64(-1)
	if r := c.Latest.Restored; r != nil {
		restored = r.ID
		out.Restored, out.RestoredSavepoint = []int64{r.ID}, r.IsSavepoint
	}
	for _, h := range c.History { // newest first
		cp := checkpointOf(h, a.Subtasks[h.ID], names)
		cp.Restored = h.ID == restored
		out.History = append(out.History, cp)
	}
	if c.Counts.Completed > 0 {
		sm := c.Summary
		out.Reported = &view.ReportedSummary{EndToEnd: durations(sm.EndToEndDuration),
			CheckpointedSize: sizes(sm.CheckpointedSize), StateSize: sizes(sm.StateSize),
			ProcessedData: sizes(sm.ProcessedData), PersistedData: sizes(sm.PersistedData)}
	}
	return out
}

// durations are Flink's figures in ms as durations; sizes in bytes. A
// figure Flink has none of (NaN) is 0.
func durations(s summaryStats) view.DurationStats {
	return view.DurationStats{Min: ms(int64(s.Min.v)), Avg: ms(int64(s.Avg.v)), Max: ms(int64(s.Max.v)), P99: ms(int64(s.P99.v))}
}

func sizes(s summaryStats) view.SizeStats {
	return view.SizeStats{Min: int64(s.Min.v), Avg: int64(s.Avg.v), Max: int64(s.Max.v), P99: int64(s.P99.v)}
}

// statuses are the history's states by Flink's names.
var statuses = map[string]view.CheckpointStatus{"IN_PROGRESS": view.StatusPending,
	"COMPLETED": view.StatusCompleted, "FAILED": view.StatusFailed}

// checkpointOf is one checkpoint of the history, with its subtasks' parts
// by vertex id (nil: not fetched).
func checkpointOf(h checkpointStats, subtasks map[string][]subtaskCheckpoint, names map[string]string) view.Checkpoint {
	c := view.Checkpoint{ID: h.ID, Savepoint: h.IsSavepoint, Status: statuses[h.Status],
		TriggerTime: time.UnixMilli(h.TriggerTimestamp), Duration: ms(h.EndToEndDuration),
		Acked: h.NumAcknowledged, Total: h.NumSubtasks, FullBytes: h.StateSize, IncrementalBytes: h.CheckpointedSize,
		InFlight: view.InFlight{PersistedInFlight: h.PersistedData, ProcessedInFlight: h.ProcessedData,
			Unaligned: strings.HasPrefix(h.CheckpointType, "UNALIGNED")}}
	switch c.Status {
	case view.StatusCompleted:
		c.EndTime = time.UnixMilli(h.LatestAckTimestamp)
	case view.StatusFailed:
		if h.FailureTimestamp != nil {
			c.EndTime = time.UnixMilli(*h.FailureTimestamp)
		}
		if h.FailureMessage != nil {
			c.Failure = *h.FailureMessage
		}
	}
	if subtasks == nil {
		return c
	}
	c.AckedTasks = map[string]view.SubtaskAck{}
	for vid, subs := range subtasks {
		for _, s := range subs {
			name := fmt.Sprintf("%s/%d", names[vid], s.Index)
			if s.ClassName != "completed" {
				if c.Status == view.StatusPending {
					c.WaitingFor = append(c.WaitingFor, name)
				}
				continue
			}
			ack := ackOf(s)
			c.AckedTasks[name] = ack
			c.MaxAlignment = max(c.MaxAlignment, ack.Alignment)
			c.Unaligned = c.Unaligned || ack.Unaligned
		}
	}
	sort.Strings(c.WaitingFor)
	return c
}

// ackOf is a subtask's acknowledgement as Flink's checkpoint monitoring
// shows it.
func ackOf(s subtaskCheckpoint) view.SubtaskAck {
	return view.SubtaskAck{SyncDuration: ms(s.Checkpoint.Sync), AsyncDuration: ms(s.Checkpoint.Async),
		Alignment: ms(s.Alignment.Duration), StartDelay: ms(s.StartDelay),
		Bytes: s.StateSize, IncrementalBytes: s.CheckpointedSize, Unaligned: s.Unaligned,
		PersistedInFlight: s.Alignment.Persisted, ProcessedInFlight: s.Alignment.Processed,
		AckTime: time.UnixMilli(s.AckTimestamp), EndToEnd: ms(s.EndToEndDuration)}
}

// restartOf is the restart strategy from the job's configuration and the
// failures from its exception history, newest first.
func restartOf(a *answers, names map[string]string) view.Restart {
	r := view.Restart{Restarts: max(a.Restarts, 0), Failover: "region"}
	conf := a.JobConfig
	if v := conf["jobmanager.execution.failover-strategy"]; v != "" {
		r.Failover = v
	}
	r.Strategy, r.Description, r.Status.MaxAttempts = strategyOf(conf)
	byName := byFlinkName(a)
	for _, e := range a.Exceptions {
		if len(r.Failures) == view.FailureHistory {
			break
		}
		task := ""
		if e.TaskName != "" {
			task = taskOf(e.TaskName, byName)
		}
		r.Failures = append(r.Failures, view.Failure{At: time.UnixMilli(e.Timestamp), Task: task, Error: rootCause(e)})
	}
	if len(r.Failures) > 0 {
		r.LastFailed, r.LastError = r.Failures[0].Task, r.Failures[0].Error
	}
	r.Status.Attempts = r.Restarts
	return r
}

// rootCause is the first line of an exception's stack trace (its type and
// message), or its name when it has none; for an exception that wraps
// others, the innermost "Caused by" line, which names what went wrong.
func rootCause(e exceptionEntry) string {
	lines := strings.Split(e.Stacktrace, "\n")
	cause := strings.TrimSpace(lines[0])
	for _, l := range lines[1:] {
		if c, ok := strings.CutPrefix(strings.TrimSpace(l), "Caused by: "); ok {
			cause = c
		}
	}
	if cause == "" {
		return e.ExceptionName
	}
	return cause
}

// strategyOf is the restart strategy the job's configuration names, with
// its parameters, and its attempts when it counts them (0: unlimited or
// not known). Without a configuration it is not known.
func strategyOf(conf map[string]string) (name, description string, attempts int) {
	if conf == nil {
		return "", "not known (the API does not serve the job's configuration)", 0
	}
	name = conf["restart-strategy.type"]
	if name == "" {
		name = conf["restart-strategy"]
	}
	var params []string
	add := func(label, key string) {
		if v := conf[key]; v != "" {
			params = append(params, label+" "+v)
		}
	}
	switch name {
	case "fixed-delay", "fixeddelay", "fixed_delay":
		name = "fixed-delay"
		add("attempts", "restart-strategy.fixed-delay.attempts")
		add("delay", "restart-strategy.fixed-delay.delay")
		fmt.Sscan(conf["restart-strategy.fixed-delay.attempts"], &attempts)
	case "failure-rate", "failurerate", "failure_rate":
		name = "failure-rate"
		add("failures", "restart-strategy.failure-rate.max-failures-per-interval")
		add("interval", "restart-strategy.failure-rate.failure-rate-interval")
		add("delay", "restart-strategy.failure-rate.delay")
	case "exponential-delay", "exponentialdelay", "exponential_delay":
		name = "exponential-delay"
		add("initial", "restart-strategy.exponential-delay.initial-backoff")
		add("max", "restart-strategy.exponential-delay.max-backoff")
		add("attempts", "restart-strategy.exponential-delay.attempts-before-reset-backoff")
	case "none", "off", "disable":
		name = "none"
	case "":
		// Flink's default with checkpointing on: exponential-delay.
		return "exponential-delay", "exponential-delay (Flink's default: no restart-strategy.type set)", 0
	}
	if len(params) == 0 {
		return name, name, attempts
	}
	return name, name + " (" + strings.Join(params, ", ") + ")", attempts
}
