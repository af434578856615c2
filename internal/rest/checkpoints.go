package rest

// The checkpoints' answers in Flink's shapes: /jobs/:id/checkpoints,
// .../details/:cid and .../details/:cid/subtasks/:vid. Pure: each is built
// from one snapshot's checkpoint statistics.

import (
	"slices"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
)

// checkpointing is Flink's CheckpointingStatistics.
type checkpointing struct {
	Counts  counts              `json:"counts"`
	Summary checkpointSummary   `json:"summary"`
	Latest  latest              `json:"latest"`
	History []checkpointDetails `json:"history"`
}

type counts struct {
	Restored   int `json:"restored"`
	Total      int `json:"total"`
	InProgress int `json:"in_progress"`
	Completed  int `json:"completed"`
	Failed     int `json:"failed"`
}

// checkpointSummary is Flink's CheckpointStatisticsSummary, over the
// completed checkpoints of the history.
type checkpointSummary struct {
	CheckpointedSize  stats `json:"checkpointed_size"`
	StateSize         stats `json:"state_size"`
	EndToEndDuration  stats `json:"end_to_end_duration"`
	AlignmentBuffered stats `json:"alignment_buffered"`
	ProcessedData     stats `json:"processed_data"`
	PersistedData     stats `json:"persisted_data"`
}

// stats is Flink's StatsSummaryDto.
type stats struct {
	Min  int64   `json:"min"`
	Max  int64   `json:"max"`
	Avg  int64   `json:"avg"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
}

// statsOf summarizes vs (all zero when empty).
func statsOf(vs []int64) stats {
	if len(vs) == 0 {
		return stats{}
	}
	vs = slices.Clone(vs)
	slices.Sort(vs)
	var sum int64
	for _, v := range vs {
		sum += v
	}
	q := func(p float64) float64 { return float64(vs[int(p*float64(len(vs)-1)+0.5)]) }
	return stats{Min: vs[0], Max: vs[len(vs)-1], Avg: sum / int64(len(vs)),
		P50: q(0.5), P90: q(0.9), P95: q(0.95), P99: q(0.99), P999: q(0.999)}
}

type latest struct {
	Completed *checkpointDetails `json:"completed"`
	Savepoint *checkpointDetails `json:"savepoint"`
	Failed    *checkpointDetails `json:"failed"`
	Restored  *restored          `json:"restored"`
}

// restored is Flink's RestoredCheckpointStatistics (faultline does not
// keep when the restore was).
type restored struct {
	ID           int64  `json:"id"`
	IsSavepoint  bool   `json:"is_savepoint"`
	ExternalPath string `json:"external_path"`
}

// checkpointStats is the part of Flink's CheckpointStatistics and
// TaskCheckpointStatistics they share.
type checkpointStats struct {
	ID                      int64  `json:"id"`
	Status                  string `json:"status"`
	LatestAckTimestamp      int64  `json:"latest_ack_timestamp"`
	CheckpointedSize        int64  `json:"checkpointed_size"`
	StateSize               int64  `json:"state_size"`
	EndToEndDuration        int64  `json:"end_to_end_duration"`
	AlignmentBuffered       int64  `json:"alignment_buffered"`
	ProcessedData           int64  `json:"processed_data"`
	PersistedData           int64  `json:"persisted_data"`
	NumSubtasks             int    `json:"num_subtasks"`
	NumAcknowledgedSubtasks int    `json:"num_acknowledged_subtasks"`
}

// checkpointDetails is Flink's CheckpointStatistics with its three kinds
// (className completed, failed, in_progress) in one: the fields of the
// other kinds are left out.
type checkpointDetails struct {
	ClassName string `json:"className"`
	checkpointStats
	IsSavepoint      bool                       `json:"is_savepoint"`
	SavepointFormat  string                     `json:"savepointFormat,omitempty"`
	TriggerTimestamp int64                      `json:"trigger_timestamp"`
	CheckpointType   string                     `json:"checkpoint_type"`
	Tasks            map[string]checkpointStats `json:"tasks"`
	// completed
	ExternalPath *string `json:"external_path,omitempty"`
	Discarded    *bool   `json:"discarded,omitempty"`
	// failed
	FailureTimestamp *int64  `json:"failure_timestamp,omitempty"`
	FailureMessage   *string `json:"failure_message,omitempty"`
}

// statusNames are Flink's CheckpointStatsStatus names.
var statusNames = map[view.CheckpointStatus]string{
	view.StatusPending: "IN_PROGRESS", view.StatusCompleted: "COMPLETED", view.StatusFailed: "FAILED"}

var classNames = map[view.CheckpointStatus]string{
	view.StatusPending: "in_progress", view.StatusCompleted: "completed", view.StatusFailed: "failed"}

// Location is where a completed savepoint or checkpoint is, as a user
// restores it: its id, which --from-savepoint takes (faultline keeps them
// in the state dir's store, not in a folder each).
func Location(id int64) string { return formatID(id) }

func ms(d time.Duration) int64 { return d.Milliseconds() }

func checkpointOf(s view.Snapshot, c view.Checkpoint) checkpointDetails {
	d := checkpointDetails{ClassName: classNames[c.Status], IsSavepoint: c.Savepoint,
		TriggerTimestamp: millis(c.TriggerTime), CheckpointType: "CHECKPOINT", Tasks: map[string]checkpointStats{}}
	d.checkpointStats = checkpointStats{ID: c.ID, Status: statusNames[c.Status], LatestAckTimestamp: -1,
		CheckpointedSize: c.IncrementalBytes, StateSize: c.FullBytes, EndToEndDuration: ms(c.Duration),
		ProcessedData: c.ProcessedInFlight, PersistedData: c.PersistedInFlight, NumSubtasks: c.Total, NumAcknowledgedSubtasks: c.Acked}
	switch {
	case c.Savepoint:
		d.CheckpointType, d.SavepointFormat = "SAVEPOINT", "CANONICAL"
	case c.Unaligned:
		d.CheckpointType = "UNALIGNED_CHECKPOINT"
	}
	for _, a := range c.AckedTasks {
		d.LatestAckTimestamp = max(d.LatestAckTimestamp, millis(a.AckTime))
	}
	for _, op := range s.Operators {
		d.Tasks[VertexID(s.Job.Name, op.Name)] = operatorCheckpoint(c, op)
	}
	switch c.Status {
	case view.StatusCompleted:
		path, discarded := Location(c.ID), c.Damaged != ""
		d.ExternalPath, d.Discarded = &path, &discarded
	case view.StatusFailed:
		at, why := millis(c.EndTime), c.Failure
		d.FailureTimestamp, d.FailureMessage = &at, &why
	}
	return d
}

// operatorCheckpoint is Flink's TaskCheckpointStatistics: op's subtasks'
// part of c.
func operatorCheckpoint(c view.Checkpoint, op view.Operator) checkpointStats {
	t := checkpointStats{ID: c.ID, Status: statusNames[c.Status], LatestAckTimestamp: -1, NumSubtasks: op.Parallelism}
	for _, a := range acksOf(c, op) {
		if a == nil {
			continue
		}
		t.NumAcknowledgedSubtasks++
		t.LatestAckTimestamp = max(t.LatestAckTimestamp, millis(a.AckTime))
		t.CheckpointedSize += a.IncrementalBytes
		t.StateSize += a.Bytes
		t.EndToEndDuration = max(t.EndToEndDuration, ms(a.EndToEnd))
		t.ProcessedData += a.ProcessedInFlight
		t.PersistedData += a.PersistedInFlight
	}
	return t
}

// acksOf are c's acknowledgements of op's subtasks by index (nil: none).
func acksOf(c view.Checkpoint, op view.Operator) []*view.SubtaskAck {
	acks := make([]*view.SubtaskAck, op.Parallelism)
	for i := range acks {
		if a, ok := c.AckedTasks[op.Name+"/"+formatID(int64(i))]; ok {
			acks[i] = &a
		}
	}
	return acks
}

func checkpointingOf(s view.Snapshot) checkpointing {
	cs := s.Checkpoints
	out := checkpointing{History: []checkpointDetails{},
		Counts: counts{Restored: len(cs.Restored), Completed: cs.Completed, Failed: cs.Failed, InProgress: cs.InProgress,
			Total: cs.Completed + cs.Failed + cs.InProgress}}
	var sizes, full, durations, processed, persisted, zero []int64
	for _, c := range cs.History { // newest first
		d := checkpointOf(s, c)
		out.History = append(out.History, d)
		switch {
		case c.Status == view.StatusFailed && out.Latest.Failed == nil:
			out.Latest.Failed = &d
		case c.Status == view.StatusCompleted && c.Savepoint && out.Latest.Savepoint == nil:
			out.Latest.Savepoint = &d
		case c.Status == view.StatusCompleted && !c.Savepoint && out.Latest.Completed == nil:
			out.Latest.Completed = &d
		}
		if c.Status == view.StatusCompleted {
			sizes, full = append(sizes, c.IncrementalBytes), append(full, c.FullBytes)
			durations, zero = append(durations, ms(c.Duration)), append(zero, 0)
			processed, persisted = append(processed, c.ProcessedInFlight), append(persisted, c.PersistedInFlight)
		}
		if c.Restored && out.Latest.Restored == nil {
			out.Latest.Restored = &restored{ID: c.ID, IsSavepoint: c.Savepoint, ExternalPath: Location(c.ID)}
		}
	}
	out.Summary = checkpointSummary{CheckpointedSize: statsOf(sizes), StateSize: statsOf(full), EndToEndDuration: statsOf(durations),
		AlignmentBuffered: statsOf(zero), ProcessedData: statsOf(processed), PersistedData: statsOf(persisted)}
	return out
}

// subtaskDetails is Flink's TaskCheckpointStatisticsWithSubtaskDetails.
type subtaskDetails struct {
	checkpointStats
	Summary  subtaskSummary      `json:"summary"`
	Subtasks []subtaskCheckpoint `json:"subtasks"`
}

type subtaskSummary struct {
	CheckpointedSize   stats     `json:"checkpointed_size"`
	StateSize          stats     `json:"state_size"`
	EndToEndDuration   stats     `json:"end_to_end_duration"`
	CheckpointDuration syncAsync `json:"checkpoint_duration"`
	Alignment          alignment `json:"alignment"`
	StartDelay         stats     `json:"start_delay"`
}

type syncAsync struct {
	Sync  stats `json:"sync"`
	Async stats `json:"async"`
}

type alignment struct {
	Buffered  stats `json:"buffered"`
	Processed stats `json:"processed"`
	Persisted stats `json:"persisted"`
	Duration  stats `json:"duration"`
}

// subtaskCheckpoint is Flink's SubtaskCheckpointStatistics, completed or
// pending (className), the completed one's fields left out of a pending.
type subtaskCheckpoint struct {
	ClassName           string            `json:"className"`
	Index               int               `json:"index"`
	Status              string            `json:"status"`
	AckTimestamp        *int64            `json:"ack_timestamp,omitempty"`
	EndToEndDuration    *int64            `json:"end_to_end_duration,omitempty"`
	StateSize           *int64            `json:"state_size,omitempty"`
	CheckpointedSize    *int64            `json:"checkpointed_size,omitempty"`
	Checkpoint          *durations        `json:"checkpoint,omitempty"`
	Alignment           *subtaskAlignment `json:"alignment,omitempty"`
	StartDelay          *int64            `json:"start_delay,omitempty"`
	UnalignedCheckpoint *bool             `json:"unaligned_checkpoint,omitempty"`
	Aborted             *bool             `json:"aborted,omitempty"`
}

type durations struct {
	Sync  int64 `json:"sync"`
	Async int64 `json:"async"`
}

type subtaskAlignment struct {
	Buffered  int64 `json:"buffered"`
	Processed int64 `json:"processed"`
	Persisted int64 `json:"persisted"`
	Duration  int64 `json:"duration"`
}

func subtasksOfCheckpoint(c view.Checkpoint, op view.Operator) subtaskDetails {
	d := subtaskDetails{checkpointStats: operatorCheckpoint(c, op), Subtasks: []subtaskCheckpoint{}}
	var cols [10][]int64
	for i, a := range acksOf(c, op) {
		if a == nil {
			d.Subtasks = append(d.Subtasks, subtaskCheckpoint{ClassName: "pending", Index: i, Status: "pending_or_failed"})
			continue
		}
		row := [10]int64{a.IncrementalBytes, a.Bytes, ms(a.EndToEnd), ms(a.SyncDuration), ms(a.AsyncDuration),
			0, a.ProcessedInFlight, a.PersistedInFlight, ms(a.Alignment), ms(a.StartDelay)}
		for k, v := range row {
			cols[k] = append(cols[k], v)
		}
		ack, unaligned, aborted := millis(a.AckTime), a.Unaligned, false
		d.Subtasks = append(d.Subtasks, subtaskCheckpoint{ClassName: "completed", Index: i, Status: "completed",
			AckTimestamp: &ack, EndToEndDuration: &row[2], StateSize: &row[1], CheckpointedSize: &row[0],
			Checkpoint: &durations{Sync: row[3], Async: row[4]},
			Alignment:  &subtaskAlignment{Processed: row[6], Persisted: row[7], Duration: row[8]},
			StartDelay: &row[9], UnalignedCheckpoint: &unaligned, Aborted: &aborted})
	}
	d.Summary = subtaskSummary{CheckpointedSize: statsOf(cols[0]), StateSize: statsOf(cols[1]), EndToEndDuration: statsOf(cols[2]),
		CheckpointDuration: syncAsync{Sync: statsOf(cols[3]), Async: statsOf(cols[4])},
		Alignment:          alignment{Buffered: statsOf(cols[5]), Processed: statsOf(cols[6]), Persisted: statsOf(cols[7]), Duration: statsOf(cols[8])},
		StartDelay:         statsOf(cols[9])}
	return d
}
