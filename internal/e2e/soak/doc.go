// Package soak holds the soaks: the default job killed again and again at
// every kind of moment (on the embedded broker, on a broker process, with
// unaligned checkpoints), its state dir damaged between the kills, a chaos
// run of faults from the whole catalogue, and the memory and disk of ten
// minutes at a steady rate. make test runs them short, make soak at full
// length. It has no code; its tests build the program once (e2e.MainPlain) and
// drive it as a user would.
package soak
