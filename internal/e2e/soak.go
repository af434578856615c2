package e2e

import "flag"

// The soaks kill and break the default job again and again; `make test`
// runs them short, `make soak` at full length (-soak), with the seed of
// their schedules given (-soak.seed) or drawn from the clock. Every
// package of end-to-end tests takes both flags, so that make soak can hand
// them to each package whose tests it runs.
var (
	soakFull = flag.Bool("soak", false, "run the soaks at full length (make soak)")
	soakSeed = flag.Int64("soak.seed", 0, "seed of the soaks' schedules (0: from the clock)")
)

// Soak reports whether the soaks run at full length (-soak, make soak).
func Soak() bool { return *soakFull }

// SoakSeed is the seed of the soaks' schedules (-soak.seed; 0: draw one
// from the clock).
func SoakSeed() int64 { return *soakSeed }
