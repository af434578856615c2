//go:build !unix

package kafka

import "time"

// processCPU is not measured here.
func processCPU() time.Duration { return 0 }
