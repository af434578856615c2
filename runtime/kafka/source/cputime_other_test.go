//go:build !unix

package source

import "time"

// processCPU is not measured here.
func processCPU() time.Duration { return 0 }
