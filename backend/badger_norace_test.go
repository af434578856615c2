//go:build !race

package backend

// incrementalTestKeys is the state size of TestBadgerIncrementalMillionKeys
// (100,000 under -race, see badger_race_test.go).
const incrementalTestKeys = 1_000_000
