//go:build !amd64 && !arm64

package backend

import "unsafe"

// prefetch does nothing here: no prefetch instruction is used on this
// architecture.
func prefetch(p unsafe.Pointer) {}
