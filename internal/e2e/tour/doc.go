// Package tour holds end-to-end tests of the guided tours: every tour
// headless, the tour command's list and refusals, a tour that carries its
// job's verdict. (The alignment tour in the terminal UI is in
// internal/e2e/tui, a tour killed on the spot in internal/e2e/statedir.)
// It has no code; its tests build the program once, with the race
// detector (e2e.Main), and drive it as a user would.
package tour
