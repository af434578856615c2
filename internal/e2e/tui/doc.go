// Package tui holds end-to-end tests of the terminal UI: the real program
// in tmux, driven with the keys a user presses and read from the screen
// (a panic injected and recovered from, the world frozen and let go, the
// at-least-once lesson, keys that arrive in one write, a terminal that
// goes away, the alignment tour with the keys a learner presses). It has no code; its tests build the program once, without
// the race detector (e2e.MainPlain: under it, drawing the screen took four
// times the CPU), and drive it as a user would. The UI's sampling and
// commands against a running job are checked for races in internal/cli
// (TestUIDrivesARealJobFromTheKeyboard), on a pseudo-terminal.
package tui
