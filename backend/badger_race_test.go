//go:build race

package backend

// incrementalTestKeys is the state size of TestBadgerIncrementalMillionKeys:
// the race detector makes Badger about ten times slower (a Put took 0.1 ms),
// so 40,000 keys under -race, enough for a delta of 400 changes against
// a full snapshot of 1.3 MB; `go test ./backend/` runs the full million.
const incrementalTestKeys = 40_000
