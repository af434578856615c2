package attach

import (
	"bytes"
	"strconv"

	"github.com/faultline-dev/faultline/internal/rest"
)

// Flink's REST answers as attach reads them (Flink 2.x, the v1 API), each
// with only the fields the screen shows. The same shapes come from a
// faultline run's --rest-addr (internal/rest), which serves the part of
// the API it has.

// number is a figure Flink writes as a JSON number, or as a string where
// it has none ("NaN" in a summary of too few samples, a watermark's
// value): a string that is not a number reads as 0 with ok false.
type number struct {
	v  float64
	ok bool
}

func (n *number) UnmarshalJSON(b []byte) error {
	b = bytes.Trim(b, `"`)
	v, err := strconv.ParseFloat(string(b), 64)
	*n = number{v: v, ok: err == nil}
	return nil
}

// overview is GET /jobs/overview.
type overview struct {
	Jobs []struct {
		JID       string `json:"jid"`
		Name      string `json:"name"`
		State     string `json:"state"`
		StartTime int64  `json:"start-time"`
	} `json:"jobs"`
}

// jobDetails is GET /jobs/:jobid.
type jobDetails struct {
	JID        string           `json:"jid"`
	Name       string           `json:"name"`
	State      string           `json:"state"`
	StartTime  int64            `json:"start-time"`
	Now        int64            `json:"now"`
	Timestamps map[string]int64 `json:"timestamps"`
	Vertices   []struct {
		ID          string `json:"id"`
		Name        string `json:"name"`
		Parallelism int    `json:"parallelism"`
		Status      string `json:"status"`
	} `json:"vertices"`
	Plan struct {
		Nodes []struct {
			ID     string `json:"id"`
			Inputs []struct {
				Num          int    `json:"num"`
				ID           string `json:"id"`
				ShipStrategy string `json:"ship_strategy"`
			} `json:"inputs"`
		} `json:"nodes"`
	} `json:"plan"`
}

// vertexDetails is GET /jobs/:jobid/vertices/:vertexid: its subtasks.
type vertexDetails struct {
	Subtasks []vertexSubtask `json:"subtasks"`
}

// vertexSubtask is one subtask of a vertex: its state, its attempt (the
// deployments before it) and its records in and out.
type vertexSubtask struct {
	Subtask int    `json:"subtask"`
	Status  string `json:"status"`
	Attempt int    `json:"attempt"`
	Metrics struct {
		ReadRecords  int64 `json:"read-records"`
		WriteRecords int64 `json:"write-records"`
	} `json:"metrics"`
}

// backPressure is GET /jobs/:jobid/vertices/:vertexid/backpressure.
type backPressure struct {
	Status   string `json:"status"`
	Subtasks []struct {
		Subtask   int     `json:"subtask"`
		Ratio     float64 `json:"ratio"`
		BusyRatio float64 `json:"busyRatio"`
		IdleRatio float64 `json:"idleRatio"`
	} `json:"subtasks"`
}

// metricValues is GET …/metrics?get=… and …/watermarks: ids and values.
type metricValues []struct {
	ID    string `json:"id"`
	Value number `json:"value"`
}

// value is the metric id's value, ok false when it is not there.
func (m metricValues) value(id string) (float64, bool) {
	for _, v := range m {
		if v.ID == id && v.Value.ok {
			return v.Value.v, true
		}
	}
	return 0, false
}

// checkpointing is GET /jobs/:jobid/checkpoints.
type checkpointing struct {
	Counts struct {
		Restored   int `json:"restored"`
		InProgress int `json:"in_progress"`
		Completed  int `json:"completed"`
		Failed     int `json:"failed"`
	} `json:"counts"`
	Summary struct {
		EndToEndDuration summaryStats `json:"end_to_end_duration"`
		CheckpointedSize summaryStats `json:"checkpointed_size"`
		StateSize        summaryStats `json:"state_size"`
		ProcessedData    summaryStats `json:"processed_data"`
		PersistedData    summaryStats `json:"persisted_data"`
	} `json:"summary"`
	Latest struct {
		Completed *checkpointStats `json:"completed"`
		Restored  *struct {
			ID           int64  `json:"id"`
			IsSavepoint  bool   `json:"is_savepoint"`
			ExternalPath string `json:"external_path"`
		} `json:"restored"`
	} `json:"latest"`
	History []checkpointStats `json:"history"`
}

// summaryStats are Flink's min / avg / max and percentiles of a figure.
type summaryStats struct {
	Min number `json:"min"`
	Avg number `json:"avg"`
	Max number `json:"max"`
	P99 number `json:"p99"`
}

// checkpointStats is one checkpoint of the history (Flink's
// CheckpointStatistics, of any of its three kinds).
type checkpointStats struct {
	ID                 int64   `json:"id"`
	Status             string  `json:"status"` // IN_PROGRESS, COMPLETED, FAILED
	IsSavepoint        bool    `json:"is_savepoint"`
	CheckpointType     string  `json:"checkpoint_type"`
	TriggerTimestamp   int64   `json:"trigger_timestamp"`
	LatestAckTimestamp int64   `json:"latest_ack_timestamp"`
	CheckpointedSize   int64   `json:"checkpointed_size"`
	StateSize          int64   `json:"state_size"`
	EndToEndDuration   int64   `json:"end_to_end_duration"`
	ProcessedData      int64   `json:"processed_data"`
	PersistedData      int64   `json:"persisted_data"`
	NumSubtasks        int     `json:"num_subtasks"`
	NumAcknowledged    int     `json:"num_acknowledged_subtasks"`
	ExternalPath       *string `json:"external_path"`
	FailureTimestamp   *int64  `json:"failure_timestamp"`
	FailureMessage     *string `json:"failure_message"`
}

// checkpointConfig is GET /jobs/:jobid/checkpoints/config.
type checkpointConfig = rest.CheckpointConfig

// subtaskCheckpoints is GET
// /jobs/:jobid/checkpoints/details/:checkpointid/subtasks/:vertexid.
type subtaskCheckpoints struct {
	Subtasks []subtaskCheckpoint `json:"subtasks"`
}

// subtaskCheckpoint is one subtask's part of a checkpoint: className
// "completed" with its figures, or "pending" (also a failed one's).
type subtaskCheckpoint struct {
	ClassName        string `json:"className"`
	Index            int    `json:"index"`
	AckTimestamp     int64  `json:"ack_timestamp"`
	EndToEndDuration int64  `json:"end_to_end_duration"`
	StateSize        int64  `json:"state_size"`
	CheckpointedSize int64  `json:"checkpointed_size"`
	Checkpoint       struct {
		Sync  int64 `json:"sync"`
		Async int64 `json:"async"`
	} `json:"checkpoint"`
	Alignment struct {
		Processed int64 `json:"processed"`
		Persisted int64 `json:"persisted"`
		Duration  int64 `json:"duration"`
	} `json:"alignment"`
	StartDelay int64 `json:"start_delay"`
	Unaligned  bool  `json:"unaligned_checkpoint"`
}

// exceptions is GET /jobs/:jobid/exceptions.
type exceptions struct {
	History struct {
		Entries []exceptionEntry `json:"entries"`
	} `json:"exceptionHistory"`
}

type exceptionEntry struct {
	ExceptionName string `json:"exceptionName"`
	Stacktrace    string `json:"stacktrace"`
	Timestamp     int64  `json:"timestamp"`
	TaskName      string `json:"taskName"`
}

// configEntries is GET /jobs/:jobid/jobmanager/config: the job's
// configuration as key/value pairs.
type configEntries []struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func (c configEntries) lookup() map[string]string {
	m := make(map[string]string, len(c))
	for _, e := range c {
		m[e.Key] = e.Value
	}
	return m
}
