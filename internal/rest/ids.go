// Package rest serves the part of Apache Flink's REST API that a faultline
// run has, in Flink's JSON shapes (Flink 2.x, the v1 API): the job, its
// checkpoints, its failures and its back pressure, read from the same
// snapshot the terminal UI draws; and the operations that drive it:
// trigger a checkpoint or a savepoint, stop with a savepoint, cancel. The
// command line's list, savepoint, stop and cancel, and curl, use it; a run
// says where it serves in its state dir (see Endpoint).
//
// What faultline does not measure (bytes on the wire, accumulated busy
// time, task managers) is left out of the answers, never invented: every
// field served is one of Flink's, with Flink's meaning.
package rest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// NewJobID is a new job's id: 32 hex digits, as Flink's JobID. Each run
// is a new job, as each submission is in Flink.
func NewJobID() string { return randomHex() }

// newTriggerID is an asynchronous operation's id (Flink: TriggerId).
func newTriggerID() string { return randomHex() }

func randomHex() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// VertexID is an operator's id (Flink: JobVertexID, 32 hex digits): the
// same for an operator of a job of that name in every run, as Flink's are
// for an unchanged job graph.
func VertexID(job, operator string) string {
	sum := sha256.Sum256([]byte(job + "\x00" + operator))
	return hex.EncodeToString(sum[:16])
}

func formatID(id int64) string { return strconv.FormatInt(id, 10) }
