// Package badgerstore is the checkpoint store of a state dir: completed
// checkpoints and savepoints, and the state blobs they name, in a Badger
// database in one directory (Flink: a CheckpointStorage and a
// CompletedCheckpointStore on disk). It implements checkpoint.Store and
// survives a kill of the process at any moment: a checkpoint is listed once
// Add has returned, a damaged file is named rather than trusted, and one
// process holds the directory at a time.
package badgerstore
