package rest

// Where a run serves its API (a file in its state dir), and the client
// the command line's list, savepoint, stop and cancel use.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/internal/atomicfile"
)

// EndpointFile is the file in a state dir that says where the run on it
// serves its REST API; the run removes it when it ends (a killed run
// leaves it, and a client finds nothing there).
const EndpointFile = "rest.json"

// Endpoint is the content of EndpointFile.
type Endpoint struct {
	Address string    `json:"address"` // host:port
	JobID   string    `json:"job_id"`
	Job     string    `json:"job"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

// WriteEndpoint writes e into stateDir's EndpointFile.
func WriteEndpoint(stateDir string, e Endpoint) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return atomicfile.Replace(filepath.Join(stateDir, EndpointFile), b)
}

// ReadEndpoint reads stateDir's EndpointFile; nil when there is none.
func ReadEndpoint(stateDir string) (*Endpoint, error) {
	b, err := os.ReadFile(filepath.Join(stateDir, EndpointFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var e Endpoint
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("%s in %s is damaged: %w", EndpointFile, stateDir, err)
	}
	return &e, nil
}

// RemoveEndpoint removes stateDir's EndpointFile when it still names
// jobID (a later run may have written its own).
func RemoveEndpoint(stateDir, jobID string) {
	if e, err := ReadEndpoint(stateDir); err == nil && e != nil && e.JobID == jobID {
		os.Remove(filepath.Join(stateDir, EndpointFile))
	}
}

// Client talks to a run's REST API.
type Client struct {
	base string
	http *http.Client
}

// NewClient is a client of the API at addr (host:port).
func NewClient(addr string) *Client {
	return &Client{base: "http://" + addr, http: &http.Client{Timeout: 10 * time.Second}}
}

// NewClientURL is a client of the API at base, a URL such as
// http://jobmanager:8081 (a Flink JobManager's REST address, or a run's);
// a host:port without a scheme is taken as http. A path after the host is
// kept (an API behind a proxy's prefix).
func NewClientURL(base string) (*Client, error) {
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("%s is not a URL: %w", base, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%s: want an http:// or https:// URL", base)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%s: the URL names no host", base)
	}
	return &Client{base: strings.TrimSuffix(u.String(), "/"), http: &http.Client{Timeout: 10 * time.Second}}, nil
}

// Base is the API's URL, as the client reaches it.
func (c *Client) Base() string { return c.base }

// Get reads the answer to GET path (e.g. "/jobs/overview") into out.
func (c *Client) Get(ctx context.Context, path string, out any) error {
	return c.call(ctx, http.MethodGet, path, nil, out)
}

// Post sends req as JSON to path and reads the answer into out (nil:
// ignored).
func (c *Client) Post(ctx context.Context, path string, req, out any) error {
	return c.call(ctx, http.MethodPost, path, req, out)
}

// Put is Post with PUT.
func (c *Client) Put(ctx context.Context, path string, req, out any) error {
	return c.call(ctx, http.MethodPut, path, req, out)
}

// JobOverview is a job as /jobs/overview lists it.
type JobOverview struct {
	ID, Name, State string
	Start           time.Time
}

// Overview lists the jobs (a run has one).
func (c *Client) Overview(ctx context.Context) ([]JobOverview, error) {
	var out struct{ Jobs []jobSummary }
	if err := c.call(ctx, http.MethodGet, "/jobs/overview", nil, &out); err != nil {
		return nil, err
	}
	var jobs []JobOverview
	for _, j := range out.Jobs {
		jobs = append(jobs, JobOverview{ID: j.JID, Name: j.Name, State: j.State, Start: time.UnixMilli(j.StartTime)})
	}
	return jobs, nil
}

// TriggerSavepoint starts a savepoint of the job and returns its trigger id.
func (c *Client) TriggerSavepoint(ctx context.Context, jobID string) (string, error) {
	return c.trigger(ctx, "/jobs/"+jobID+"/savepoints", map[string]any{"cancel-job": false})
}

// StopWithSavepoint stops the job with a savepoint and returns the
// trigger id of the savepoint.
func (c *Client) StopWithSavepoint(ctx context.Context, jobID string) (string, error) {
	return c.trigger(ctx, "/jobs/"+jobID+"/stop", map[string]any{"drain": false})
}

// Terminate ends the job: mode "cancel" or "stop".
func (c *Client) Terminate(ctx context.Context, jobID, mode string) error {
	return c.call(ctx, http.MethodPatch, "/jobs/"+jobID+"?mode="+mode, nil, nil)
}

// State is the job's state (Flink's JobStatus).
func (c *Client) State(ctx context.Context, jobID string) (string, error) {
	var out struct{ State string }
	err := c.call(ctx, http.MethodGet, "/jobs/"+jobID, nil, &out)
	return out.State, err
}

// Savepoint is how a savepoint (or checkpoint) operation stands: Done,
// then its Location (a checkpoint's: its ID) or its Failure.
type Savepoint struct {
	Done              bool
	Location, Failure string
	ID                int64
}

// SavepointStatus asks how the savepoint under trigger id tid stands.
func (c *Client) SavepointStatus(ctx context.Context, jobID, tid string) (Savepoint, error) {
	return c.operation(ctx, "/jobs/"+jobID+"/savepoints/"+tid)
}

// TriggerCheckpoint starts a checkpoint of the job (Flink 1.19 and later)
// and returns its trigger id.
func (c *Client) TriggerCheckpoint(ctx context.Context, jobID string) (string, error) {
	return c.trigger(ctx, "/jobs/"+jobID+"/checkpoints", map[string]any{})
}

// CheckpointStatus asks how the checkpoint under trigger id tid stands.
func (c *Client) CheckpointStatus(ctx context.Context, jobID, tid string) (Savepoint, error) {
	return c.operation(ctx, "/jobs/"+jobID+"/checkpoints/"+tid)
}

// operation reads an asynchronous operation's answer at path.
func (c *Client) operation(ctx context.Context, path string) (Savepoint, error) {
	var out struct {
		Status    struct{ ID string }
		Operation struct {
			Location     string
			CheckpointID int64 `json:"checkpointId"`
			Failure      *struct {
				StackTrace string `json:"stack-trace"`
			} `json:"failure-cause"`
		}
	}
	if err := c.call(ctx, http.MethodGet, path, nil, &out); err != nil {
		return Savepoint{}, err
	}
	sp := Savepoint{Done: out.Status.ID == "COMPLETED", Location: out.Operation.Location, ID: out.Operation.CheckpointID}
	if out.Operation.Failure != nil {
		sp.Failure = out.Operation.Failure.StackTrace
	}
	return sp, nil
}

func (c *Client) trigger(ctx context.Context, path string, req any) (string, error) {
	var out struct {
		RequestID string `json:"request-id"`
	}
	err := c.call(ctx, http.MethodPost, path, req, &out)
	return out.RequestID, err
}

// APIError is an answer of the API that is not a success: its HTTP
// status and Flink's errors list.
type APIError struct {
	Code   int
	Errors []string
}

func (e *APIError) Error() string {
	if len(e.Errors) == 0 {
		return http.StatusText(e.Code)
	}
	return strings.Join(e.Errors, "; ")
}

// call sends req (JSON, nil: none) and reads the answer into out (nil:
// ignored).
func (c *Client) call(ctx context.Context, method, path string, req, out any) error {
	var rd io.Reader
	if req != nil {
		b, err := json.Marshal(req)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	r, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		e := &APIError{Code: resp.StatusCode}
		var body struct{ Errors []string }
		if json.Unmarshal(b, &body) == nil {
			e.Errors = body.Errors
		}
		return e
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}
