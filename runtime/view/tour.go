package view

// Tour is what a guided tour shows beside the job while it runs
// (`faultline tour NAME`): its narration, what it points at, what it waits
// for, and how its last check came out. Snapshot.Tour is nil outside a tour.
type Tour struct {
	// Title is the tour's title; Step is the number (from 1) of the step
	// whose narration is shown, of Steps in the tour.
	Title       string
	Step, Steps int
	// Text is the narration: a few short lines, in which **Flink term**
	// marks a term to show in bold. Link is the Flink documentation page
	// for it ("" when none).
	Text string
	Link string
	// Earlier is set while the learner looks back at an earlier step's
	// narration (b); n returns to the current one.
	Earlier bool
	// Waiting says what the tour waits for now, in a few words ("the next
	// checkpoint", "join/1 to align"), "" when it waits for nothing.
	Waiting string
	// Key is the key (or keys, "x then 1") the learner is asked to press
	// now, "" when none; Autoplay is set when the tour presses it itself.
	Key      string
	Autoplay bool
	// Next is set when the tour waits for the learner to read on: n goes
	// to the next step.
	Next bool
	// Hint says what went wrong with the keys the learner pressed (a
	// fault into another subtask than the step asks for), and how to go
	// on; "" when nothing did.
	Hint string
	// Check is the newest check's result, nil before the first.
	Check *TourCheck
	// Highlight is the part of the screen the current step points at.
	Highlight Highlight
	// Done is set once the tour ended (every step ran); Passed when every
	// check held.
	Done, Passed bool
}

// TourCheck is a tour's claim about the running job and whether it held.
type TourCheck struct {
	Claim string // "nothing lost, nothing duplicated"
	Held  bool
	// Why says, when the claim did not hold, what was seen instead.
	Why string
}

// Highlight is a part of the screen a tour points at. The zero value
// points at nothing.
type Highlight struct {
	// Task is a subtask ("join/1"); with Inputs set, its input channel
	// strips rather than its cell.
	Task   string
	Inputs bool
	// Checkpoint is a checkpoint's row in the history (0: none).
	Checkpoint int64
	// Verify is the live verification line; Restart the restart
	// strategy's pane; Header the header's mode and status.
	Verify, Restart, Header bool
}

// Any reports whether h points at something.
func (h Highlight) Any() bool { return h != Highlight{} }
