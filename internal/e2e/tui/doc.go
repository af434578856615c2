// Package tui holds end-to-end tests of the terminal UI: the real program
// in tmux, driven with the keys a user presses and read from the screen
// (a panic injected and recovered from, the world frozen and let go, the
// at-least-once lesson, keys that arrive in one write, a terminal that
// goes away). It has no code; its tests build the program once (e2e.Main)
// and drive it as a user would.
package tui
