//go:build flink

package flinklane

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// client is what the lane asks Flink's REST API with: a MiniCluster on a
// busy machine answers within seconds or not at all.
var client = &http.Client{Timeout: 10 * time.Second}

// Get decodes the JSON that Flink's REST API answers to GET path (e.g.
// /jobs/overview) into v.
func (p *Peer) Get(path string, v any) error {
	return p.do(http.MethodGet, path, v)
}

func (p *Peer) do(method, path string, v any) error {
	req, err := http.NewRequest(method, p.REST+path, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, body)
	}
	if v == nil {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s %s: %w: %s", method, path, err, body)
	}
	return nil
}

// State is the job's status as GET /jobs/overview gives it: RUNNING,
// RESTARTING, CANCELED, FINISHED, … ("" while the job is not listed).
func (p *Peer) State() (string, error) {
	var ov struct {
		Jobs []struct {
			JID   string `json:"jid"`
			State string `json:"state"`
		} `json:"jobs"`
	}
	if err := p.Get("/jobs/overview", &ov); err != nil {
		return "", err
	}
	for _, j := range ov.Jobs {
		if j.JID == p.JobID {
			return j.State, nil
		}
	}
	return "", nil
}

// Job is what GET /jobs/ID says of the job: its status, when it last
// entered each status (ms since the epoch, by status name) and the status
// of each of its vertices.
type Job struct {
	State      string           `json:"state"`
	Timestamps map[string]int64 `json:"timestamps"`
	Vertices   []struct {
		Name        string `json:"name"`
		Parallelism int    `json:"parallelism"`
		Status      string `json:"status"`
	} `json:"vertices"`
}

// Job is GET /jobs/ID.
func (p *Peer) Job() (Job, error) {
	var j Job
	err := p.Get("/jobs/"+p.JobID, &j)
	return j, err
}

// CompletedCheckpoints is how many checkpoints of the job have completed
// (GET /jobs/ID/checkpoints, counts.completed).
func (p *Peer) CompletedCheckpoints() (int, error) {
	var cp struct {
		Counts struct {
			Completed int `json:"completed"`
		} `json:"counts"`
	}
	err := p.Get("/jobs/"+p.JobID+"/checkpoints", &cp)
	return cp.Counts.Completed, err
}

// Exception is one entry of the job's exception history: a failure that
// made the job restart (or fail).
type Exception struct {
	Name       string `json:"exceptionName"`
	Stacktrace string `json:"stacktrace"`
	Timestamp  int64  `json:"timestamp"`
	TaskName   string `json:"taskName"`
}

// Exceptions is the job's exception history, newest first (GET
// /jobs/ID/exceptions; Flink 2 answers with exceptionHistory alone).
func (p *Peer) Exceptions() ([]Exception, error) {
	var ex struct {
		History struct {
			Entries []Exception `json:"entries"`
		} `json:"exceptionHistory"`
	}
	err := p.Get("/jobs/"+p.JobID+"/exceptions", &ex)
	return ex.History.Entries, err
}

// Cancel asks Flink to cancel the job (PATCH /jobs/ID?mode=cancel); the
// program then prints the job's status and exits.
func (p *Peer) Cancel() error {
	return p.do(http.MethodPatch, "/jobs/"+p.JobID+"?mode=cancel", nil)
}
