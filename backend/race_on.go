//go:build race

package backend

// With the race detector (make test), every key group a caller hands in
// is checked against the key.
const verifyKeyGroups = true
