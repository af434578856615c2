// Package backend holds keyed and operator state, key groups, and the state
// backends that keep state while a job runs and snapshot it for checkpoints
// (Flink: HashMapStateBackend, EmbeddedRocksDBStateBackend).
package backend

import "fmt"

// DefaultMaxParallelism is the number of key groups when a job names none
// (Flink's default lower bound).
const DefaultMaxParallelism = 128

// KeyGroupFor hashes key into one of maxParallelism key groups (Flink:
// KeyGroupRangeAssignment.assignToKeyGroup). The hash is stable across
// processes, so state written by one run is found by the next.
func KeyGroupFor(key string, maxParallelism int) int {
	// FNV-1a, then murmur3's finaliser to spread short keys.
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return int(h % uint32(maxParallelism))
}

// OperatorIndexFor is the subtask that owns keyGroup at the given parallelism
// (Flink: KeyGroupRangeAssignment.computeOperatorIndexForKeyGroup).
func OperatorIndexFor(keyGroup, maxParallelism, parallelism int) int {
	return keyGroup * parallelism / maxParallelism
}

// KeyGroupRange is the inclusive range of key groups one subtask owns
// (Flink: KeyGroupRange).
type KeyGroupRange struct {
	Start, End int
}

// RangeFor returns the key groups of subtask index out of parallelism
// (Flink: computeKeyGroupRangeForOperatorIndex).
func RangeFor(maxParallelism, parallelism, index int) KeyGroupRange {
	return KeyGroupRange{
		Start: (index*maxParallelism + parallelism - 1) / parallelism,
		End:   ((index+1)*maxParallelism - 1) / parallelism,
	}
}

// Contains reports whether kg is in the range.
func (r KeyGroupRange) Contains(kg int) bool { return kg >= r.Start && kg <= r.End }

// Len is the number of key groups in the range.
func (r KeyGroupRange) Len() int { return r.End - r.Start + 1 }

func (r KeyGroupRange) String() string { return fmt.Sprintf("key groups %d-%d", r.Start, r.End) }

// checkKeyGroup panics, in builds with the race detector, when kg is not
// key's key group: a caller that hands in a wrong one would file the key's
// state where no lookup finds it.
func checkKeyGroup(key string, kg, maxParallelism int) {
	if verifyKeyGroups {
		if want := KeyGroupFor(key, maxParallelism); kg != want {
			panic(fmt.Sprintf("key %q is in key group %d, not the %d given", key, want, kg))
		}
	}
}
