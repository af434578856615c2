// Package faults holds end-to-end tests of the faults a run meets, and
// what it makes of them: the fault catalogue as --inject fires it, the
// failover strategies, unaligned checkpoints under a slowed join, and
// brokers that are unreachable, silent, missing a topic or gone for good.
// It has no code; its tests build the program once (e2e.MainPlain) and drive
// it as a user would.
package faults
