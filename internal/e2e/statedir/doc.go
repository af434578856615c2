// Package statedir holds end-to-end tests of what a state dir carries
// from one run to the next: a second run refused with the ways on,
// --resume and --fresh, reset, a resumed run with no checkpoint left, the
// broker log's retention, and a state dir damaged, in the way or on a full
// disk. It has no code; its tests build the program once (e2e.Main) and
// drive it as a user would.
package statedir
