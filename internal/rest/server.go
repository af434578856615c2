package rest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
)

// Job is the running job the API serves and drives. Every method returns
// promptly.
type Job interface {
	// Snapshot samples the job.
	Snapshot() view.Snapshot
	// TriggerCheckpoint and TriggerSavepoint start one now and return
	// its id.
	TriggerCheckpoint() (int64, error)
	TriggerSavepoint() (int64, error)
	// Stop ends the run as a stop signal does, with a savepoint first
	// when savepoint is set (Flink: stop-with-savepoint).
	Stop(savepoint bool)
	// Cancel ends the run (Flink: cancel).
	Cancel()
}

// Server serves one job's REST API over HTTP.
type Server struct {
	id  string
	job Job
	srv *http.Server
	ln  net.Listener
	ops operations
}

// lingerLimit is how long Close waits for a stop's client to read how the
// stop ended, once the run has ended.
const lingerLimit = time.Second

// Serve listens on addr (host:port) and serves job, whose id is id, there
// until Close.
func Serve(addr, id string, job Job) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{id: id, job: job, ln: ln, ops: newOperations()}
	s.srv = &http.Server{Handler: s.handler(), ReadHeaderTimeout: 5 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// Addr is the address it listens on (host:port).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Ended says the run has ended, with the savepoint its stop took (0:
// none); a stop's operation is decided by it.
func (s *Server) Ended(savepoint int64) { s.ops.ended(savepoint) }

// Close stops serving. A stop asked for through the API is answered
// first: Close waits up to lingerLimit for its client to read how it
// ended.
func (s *Server) Close() error {
	s.ops.linger(lingerLimit)
	return s.srv.Close()
}

// handler routes Flink's paths, with and without the /v1 prefix.
func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jobs", s.jobs)
	mux.HandleFunc("GET /jobs/overview", s.overview)
	mux.HandleFunc("GET /jobs/{jobid}", s.withJob(s.details))
	mux.HandleFunc("PATCH /jobs/{jobid}", s.withJob(s.terminate))
	mux.HandleFunc("GET /jobs/{jobid}/exceptions", s.withJob(s.exceptions))
	mux.HandleFunc("GET /jobs/{jobid}/vertices/{vid}/backpressure", s.withJob(s.backpressure))
	mux.HandleFunc("GET /jobs/{jobid}/vertices/{vid}", s.withJob(s.vertexDetails))
	mux.HandleFunc("GET /jobs/{jobid}/vertices/{vid}/watermarks", s.withJob(s.watermarks))
	mux.HandleFunc("GET /jobs/{jobid}/metrics", s.withJob(s.jobMetrics))
	mux.HandleFunc("GET /jobs/{jobid}/checkpoints/config", s.withJob(s.checkpointConfig))
	mux.HandleFunc("GET /jobs/{jobid}/jobmanager/config", s.withJob(s.jobConfig))
	mux.HandleFunc("GET /jobs/{jobid}/checkpoints", s.withJob(s.checkpoints))
	mux.HandleFunc("POST /jobs/{jobid}/checkpoints", s.withJob(s.triggerCheckpoint))
	mux.HandleFunc("GET /jobs/{jobid}/checkpoints/{triggerid}", s.withJob(s.status(opCheckpoint)))
	mux.HandleFunc("GET /jobs/{jobid}/checkpoints/details/{cid}", s.withJob(s.checkpoint))
	mux.HandleFunc("GET /jobs/{jobid}/checkpoints/details/{cid}/subtasks/{vid}", s.withJob(s.checkpointSubtasks))
	mux.HandleFunc("POST /jobs/{jobid}/savepoints", s.withJob(s.triggerSavepoint))
	mux.HandleFunc("GET /jobs/{jobid}/savepoints/{triggerid}", s.withJob(s.status(opSavepoint)))
	mux.HandleFunc("POST /jobs/{jobid}/stop", s.withJob(s.stop))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusNotFound, "Not found: "+r.URL.Path)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, "/v1/"); ok {
			r.URL.Path = "/" + rest
		}
		mux.ServeHTTP(w, r)
	})
}

// reply writes v as JSON with code.
func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// fail writes Flink's error body: {"errors": [...]}.
func fail(w http.ResponseWriter, code int, msg string) {
	reply(w, code, map[string][]string{"errors": {msg}})
}

// jobHandler serves a request about the job, with a snapshot of it.
type jobHandler func(w http.ResponseWriter, r *http.Request, snap view.Snapshot)

// withJob answers 404 for a job id that is not this run's job's.
func (s *Server) withJob(h jobHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if id := r.PathValue("jobid"); id != s.id {
			fail(w, http.StatusNotFound, fmt.Sprintf("Job %s not found", id))
			return
		}
		h(w, r, s.job.Snapshot())
	}
}

func (s *Server) jobs(w http.ResponseWriter, r *http.Request) {
	snap := s.job.Snapshot()
	reply(w, http.StatusOK, map[string][]jobIDStatus{"jobs": {{ID: s.id, Status: snap.Job.Status}}})
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	reply(w, http.StatusOK, map[string][]jobSummary{"jobs": {summaryOf(s.id, s.job.Snapshot())}})
}

func (s *Server) details(w http.ResponseWriter, r *http.Request, snap view.Snapshot) {
	reply(w, http.StatusOK, detailsOf(s.id, snap))
}

func (s *Server) exceptions(w http.ResponseWriter, r *http.Request, snap view.Snapshot) {
	limit := 0
	if v := r.URL.Query().Get("maxExceptions"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			fail(w, http.StatusBadRequest, "maxExceptions: want a whole number, got "+v)
			return
		}
		limit = n
	}
	reply(w, http.StatusOK, exceptionsOf(snap, limit))
}

// vertex finds the operator a path's vid names: its vertex id or its name.
func vertex(w http.ResponseWriter, r *http.Request, snap view.Snapshot) (view.Operator, bool) {
	vid := r.PathValue("vid")
	for _, op := range snap.Operators {
		if vid == VertexID(snap.Job.Name, op.Name) || vid == op.Name {
			return op, true
		}
	}
	fail(w, http.StatusNotFound, fmt.Sprintf("JobVertex %s not found", vid))
	return view.Operator{}, false
}

func (s *Server) backpressure(w http.ResponseWriter, r *http.Request, snap view.Snapshot) {
	if op, ok := vertex(w, r, snap); ok {
		reply(w, http.StatusOK, backPressureOf(snap, op))
	}
}

func (s *Server) checkpoints(w http.ResponseWriter, r *http.Request, snap view.Snapshot) {
	reply(w, http.StatusOK, checkpointingOf(snap))
}

// checkpointNamed finds the checkpoint of a path's cid in the history.
func checkpointNamed(w http.ResponseWriter, r *http.Request, snap view.Snapshot) (view.Checkpoint, bool) {
	id, err := strconv.ParseInt(r.PathValue("cid"), 10, 64)
	if err == nil {
		for _, c := range snap.Checkpoints.History {
			if c.ID == id {
				return c, true
			}
		}
	}
	fail(w, http.StatusNotFound, fmt.Sprintf("Could not find checkpointing statistics for checkpoint %s.", r.PathValue("cid")))
	return view.Checkpoint{}, false
}

func (s *Server) checkpoint(w http.ResponseWriter, r *http.Request, snap view.Snapshot) {
	if c, ok := checkpointNamed(w, r, snap); ok {
		reply(w, http.StatusOK, checkpointOf(snap, c))
	}
}

func (s *Server) checkpointSubtasks(w http.ResponseWriter, r *http.Request, snap view.Snapshot) {
	c, ok := checkpointNamed(w, r, snap)
	if !ok {
		return
	}
	if op, ok := vertex(w, r, snap); ok {
		reply(w, http.StatusOK, subtasksOfCheckpoint(c, op))
	}
}

// body reads a request's JSON body into v; an empty body leaves v as it is.
func body(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err == nil && len(strings.TrimSpace(string(b))) > 0 {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		fail(w, http.StatusBadRequest, "Request did not match expected format: "+err.Error())
		return false
	}
	return true
}

// running refuses an operation on a job that has ended.
func running(w http.ResponseWriter, snap view.Snapshot) bool {
	if ended(snap.Job.Status) {
		fail(w, http.StatusConflict, fmt.Sprintf("Job %s is %s: it runs no more", snap.Job.Name, snap.Job.Status))
		return false
	}
	return true
}

func (s *Server) terminate(w http.ResponseWriter, r *http.Request, snap view.Snapshot) {
	mode := strings.ToLower(r.URL.Query().Get("mode"))
	if mode != "" && mode != "cancel" && mode != "stop" {
		fail(w, http.StatusBadRequest, "mode: want cancel or stop, got "+mode)
		return
	}
	// A FAILED job may still hold its run (the terminal UI waits for R to
	// resubmit it): that run can be ended; a FINISHED or CANCELED one is
	// ending already.
	if snap.Job.Status != "FAILED" && !running(w, snap) {
		return
	}
	if mode == "stop" {
		s.job.Stop(false)
	} else {
		s.job.Cancel()
	}
	reply(w, http.StatusAccepted, struct{}{})
}

// triggered answers a triggered operation with its id.
func triggered(w http.ResponseWriter, id string) {
	reply(w, http.StatusAccepted, map[string]string{"request-id": id})
}

func (s *Server) triggerCheckpoint(w http.ResponseWriter, r *http.Request, snap view.Snapshot) {
	var req struct {
		CheckpointType string `json:"checkpointType"`
		TriggerID      string `json:"triggerId"`
	}
	if !body(w, r, &req) || !running(w, snap) {
		return
	}
	triggered(w, s.ops.start(opCheckpoint, req.TriggerID, func() (int64, error) { return s.job.TriggerCheckpoint() }))
}

func (s *Server) triggerSavepoint(w http.ResponseWriter, r *http.Request, snap view.Snapshot) {
	var req struct {
		TargetDirectory *string `json:"target-directory"`
		CancelJob       bool    `json:"cancel-job"`
		FormatType      string  `json:"formatType"`
		TriggerID       string  `json:"triggerId"`
	}
	if !body(w, r, &req) || !noTarget(w, req.TargetDirectory) || !running(w, snap) {
		return
	}
	if req.CancelJob {
		triggered(w, s.ops.start(opStop, req.TriggerID, func() (int64, error) { s.job.Stop(true); return 0, nil }))
		return
	}
	triggered(w, s.ops.start(opSavepoint, req.TriggerID, func() (int64, error) { return s.job.TriggerSavepoint() }))
}

func (s *Server) stop(w http.ResponseWriter, r *http.Request, snap view.Snapshot) {
	var req struct {
		TargetDirectory *string `json:"targetDirectory"`
		Drain           bool    `json:"drain"`
		FormatType      string  `json:"formatType"`
		TriggerID       string  `json:"triggerId"`
	}
	if !body(w, r, &req) || !noTarget(w, req.TargetDirectory) || !running(w, snap) {
		return
	}
	if req.Drain {
		fail(w, http.StatusBadRequest, "drain: faultline cannot drain a job (its sources do not end with the savepoint); stop without it")
		return
	}
	triggered(w, s.ops.start(opStop, req.TriggerID, func() (int64, error) { s.job.Stop(true); return 0, nil }))
}

// noTarget refuses a target directory: savepoints live in the state
// dir's store, each known by its id.
func noTarget(w http.ResponseWriter, dir *string) bool {
	if dir != nil && *dir != "" {
		fail(w, http.StatusBadRequest, "faultline keeps savepoints in the state dir's store, each known by its id: leave the target directory out")
		return false
	}
	return true
}

// status answers how an operation of that kind stands.
func (s *Server) status(kind opKind) jobHandler {
	return func(w http.ResponseWriter, r *http.Request, snap view.Snapshot) {
		res, known := s.ops.decide(r.PathValue("triggerid"), kind, snap)
		if !known {
			fail(w, http.StatusNotFound, "Operation not found under key: "+r.PathValue("triggerid"))
			return
		}
		reply(w, http.StatusOK, res)
	}
}
