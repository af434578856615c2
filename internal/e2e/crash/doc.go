// Package crash holds end-to-end tests of faultline killed and stopped:
// SIGKILL at any moment (the crash fault, the supervisor's child alone,
// random kills while checkpoints are written), Ctrl-C and SIGTERM
// wherever a run is, and what the checkpoints command and a resumed run
// make of the checkpoints a crash damaged or lost. It has no code; its
// tests build the program once (e2e.MainPlain) and drive it as a user would.
package crash
