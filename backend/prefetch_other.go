//go:build !amd64 && !arm64

package backend

import "unsafe"

// prefetch2 does nothing here: no prefetch instruction is used on this
// architecture.
func prefetch2(p, q unsafe.Pointer) {}
