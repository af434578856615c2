//go:build race

package backend

// incrementalTestKeys is the state size of TestBadgerIncrementalMillionKeys:
// the race detector makes Badger about ten times slower, so 100,000 keys
// under -race; `go test ./backend/` runs the full million.
const incrementalTestKeys = 100_000
