// Package tour reads guided tours (fixtures/tours/*.yaml) and runs them on
// a live job: a tour narrates, waits for the moment that matters, points at
// the part of the screen that shows it, asks the learner for a key (or
// presses it itself in autoplay), and checks that what it promised really
// happened.
package tour

import (
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
)

// Tour is one guided tour, as its file describes it.
type Tour struct {
	// Name is the file's name without .yaml: what `faultline tour NAME`
	// takes.
	Name string
	File string
	// Title is a few words; Summary one line; Minutes how long the tour
	// takes, about.
	Title   string
	Summary string
	Minutes int
	// Concepts are the fault-tolerance concepts the tour shows (see
	// docs/TOURS.md).
	Concepts []string
	// Run are the `faultline run` flags of the tour's job.
	Run   []string
	Steps []Step
}

// Step is one step of a tour: exactly one of its actions is set.
type Step struct {
	Line int // in the tour's file

	// Say shows Text (with **term** in bold) and Link; interactively the
	// tour then waits for n, unless Auto.
	Say  string
	Link string
	Auto bool

	// Wait waits for a moment of the job.
	Wait *Cond
	// Tempo sets the world's tempo: normal, slow, slower or frozen.
	Tempo string
	// StepTo, while frozen, steps to the next moment a person can see,
	// this many times (as "." does).
	StepTo int
	// Highlight points at a part of the screen until the next Highlight
	// (an empty one points at nothing). CheckpointLatest points at the
	// newest completed checkpoint's row.
	Highlight        *view.Highlight
	CheckpointLatest bool
	// Press asks the learner for a key that does Do; the tour goes on
	// once Until holds (autoplay and headless do it themselves).
	Press *Press
	// Do acts on the job directly.
	Do *Action
	// Check states a claim about the job and says whether it holds.
	Check *Check
	// Run stops the job and starts it again with these `faultline run`
	// flags on the tour's state dir ("{savepoint}" is the newest
	// savepoint's id).
	Run []string
}

// Kind names the step's action, as the headless lines say it.
func (s Step) Kind() string {
	switch {
	case s.Say != "":
		return "say"
	case s.Wait != nil:
		return "wait"
	case s.Tempo != "":
		return "tempo"
	case s.StepTo > 0:
		return "step"
	case s.Highlight != nil:
		return "highlight"
	case s.Press != nil:
		return "press"
	case s.Do != nil:
		return "do"
	case s.Check != nil:
		return "check"
	case s.Run != nil:
		return "run"
	}
	return ""
}

// Press is a key the learner is asked to press, and what it does.
type Press struct {
	Keys  string // as the learner reads it: "x then 1 then y"
	Do    Action
	Until *Cond // when the key has done its work (default: from Do)
}

// Action is something the tour does to the job, as a key would.
type Action struct {
	Inject string // a fault of the catalogue
	Task   string // the subtask of a task fault
	// For is how long a slow or broker-down fault lasts (0: as the
	// menu's).
	For           time.Duration
	Mode          string // exactly-once, exactly-once unaligned, at-least-once
	Checkpoint    bool
	Savepoint     bool
	ResetRestarts bool
	Rate          float64
}

// Cond is a moment of the job the tour waits for.
type Cond struct {
	// Event is an event's name (view events, e.g. checkpoint_completed),
	// with Where its fields' values as text (e.g. task: join/1); it must
	// come after the step began.
	Event string
	Where map[string]string
	// Aligning is a subtask that must be aligning a checkpoint; Slowed one
	// a slow fault holds.
	Aligning string
	Slowed   string
	// Overtaken is a subtask one of whose input channels holds an
	// unaligned barrier at its front, over the records it overtook (▌n«
	// and • in its strips).
	Overtaken string
	// Freeze freezes the world once the moment comes, so that it stays on
	// screen until the learner moves on; when it passed before the freeze
	// took, the tour steps the frozen world until it comes again.
	Freeze bool
	// JobStatus is the job's status (RUNNING, RESTARTING, FAILED, …).
	JobStatus string
	// Checkpoints is how many checkpoints must complete after the step
	// began.
	Checkpoints int
	// Says is what the panel says the tour waits for.
	Says    string
	Timeout time.Duration
}

// Check is a claim about the job. Each field set must hold; comparisons
// are written "0", ">0", ">=2", "<5".
type Check struct {
	Claim string
	// Duplicates and Lost are the live verification's counts, as of a
	// checkpoint completed after the newest restore.
	Duplicates string
	Lost       string
	// Restarts counts the job's restarts; RestoredFrom the checkpoint the
	// newest restore used: a comparison, "newest" (the newest completed
	// before it) or "older" (an older one: a fallback).
	Restarts     string
	RestoredFrom string
	JobStatus    string
	// Event must have come since the tour's job started, with Where.
	Event string
	Where map[string]string
	// Within is how long the claim may take to hold (default 30s).
	Within time.Duration
	// Explain says why when the claim does not hold.
	Explain string
}

// modeNames are the names a tour file may give a mode (view.Modes).
func modeNames() []string { return names(view.Modes) }

// statusNames are the job statuses a tour file may name (view.JobStates).
func statusNames() []string { return names(view.JobStates) }

// names are vs as strings.
func names[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}
