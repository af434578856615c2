// Package statedir holds end-to-end tests of what a state dir carries
// from one run to the next: a second run refused with the ways on,
// --resume and --fresh, reset, a resumed run with no checkpoint left, the
// broker log's retention, a state dir damaged, in the way or on a full
// disk, and the state dir of a tour killed on the spot. It has no code;
// its tests build the program once (e2e.MainPlain) and drive it as a user
// would.
package statedir
