package runtime

import (
	"github.com/faultline-dev/faultline/runtime/spec"
	"github.com/faultline-dev/faultline/runtime/verify"
)

// TestJob is the job the engine's own tests run: the orders job, which
// imports the engine, so that the engine's tests cannot import it. Its
// package's init in testjob_test.go (package runtime_test, which can) sets
// it before any test runs.
type TestJob struct {
	Types Types
	// NewInput returns the job's seeded input of records (0: unbounded),
	// read at rate records/s (0: as fast as it goes).
	NewInput func(seed, records int64, rate float64) TestInput
	// Partitions is how many partitions each input topic has.
	Partitions int
	// Spec returns the job's built-in spec; Catalogue is what its specs
	// are checked against.
	Spec      func() *spec.Job
	YAML      string
	Catalogue spec.Catalogue
}

// The test job's input topics.
const (
	topicOrders   = "orders"
	topicPayments = "payments"
)

// TestInput is the seeded input of the test job, as the tests use it.
type TestInput interface {
	verify.InputReader
	Source(topic string) (Source, error)
	EndOffset(topic string, p int) int64
	Read(topic string, p int, off int64) ([]byte, bool)
	Paid(order int64) bool
}

var testJob TestJob

// SetTestJob sets the job the engine's tests run.
func SetTestJob(j TestJob) { testJob = j }

// newTestInput is the test job's input (see TestJob.NewInput).
func newTestInput(seed, records int64, rate float64) TestInput {
	return testJob.NewInput(seed, records, rate)
}

// testPartitions says how many partitions a topic of the test job's input
// has (CheckFault's partitions).
func testPartitions(string) int { return testJob.Partitions }

// genEnv is an environment that reads the test job's input (seed, records,
// rate as newTestInput) and writes the revenue topic into memory.
func genEnv(seed, records int64, rate float64) (TestInput, *MemoryOutput, *Env) {
	gen := newTestInput(seed, records, rate)
	out := NewMemoryOutput()
	env := &Env{Sources: map[string]Source{}, Outputs: map[string]TxnOutput{"revenue": out}}
	for _, topic := range []string{topicOrders, topicPayments} {
		s, _ := gen.Source(topic)
		env.Sources[topic] = s
	}
	return gen, out, env
}
