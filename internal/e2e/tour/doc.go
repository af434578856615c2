// Package tour holds end-to-end tests of the guided tours: every tour
// headless, the tour command's list and refusals, a tour that carries its
// job's verdict, a tour killed on the spot, and the alignment tour in the
// terminal UI with the keys a learner presses. It has no code; its tests
// build the program once (e2e.Main) and drive it as a user would.
package tour
