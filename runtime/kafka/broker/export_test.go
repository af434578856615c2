package broker

// What the broker's tests (package broker_test, which imports kafkatest,
// which imports this package) use of its unexported parts.
var (
	CheckLog           = checkLog
	MemorySegmentBytes = memorySegmentBytes
	DiskSegmentBytes   = diskSegmentBytes
	// RoundRecords is the most a retention round reads of a partition at
	// once, for a test to lower.
	RoundRecords = &roundRecords
)
