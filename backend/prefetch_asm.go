//go:build amd64 || arm64

package backend

import "unsafe"

// prefetch2 asks the CPU to bring the cache lines at p and q into its
// caches without waiting for them (PREFETCHT0 on amd64, PRFM on arm64,
// nothing elsewhere). It never faults, whatever p and q are.
//
//go:noescape
func prefetch2(p, q unsafe.Pointer)
