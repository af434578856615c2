package runtime

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/runtime/verify"
)

// MemoryOutput is an in-memory transactional topic, a stand-in for a Kafka
// topic written with transactions: records of a transaction become visible
// to readers (Committed) only when it commits, and an aborted transaction's
// records are never seen. Like Kafka's transactional ids, a transaction name
// can be used again once its transaction ended; each use is a new
// generation, and a committable names the generation. It outlives job
// attempts, as an external system would. Safe for concurrent use.
type MemoryOutput struct {
	mu        sync.Mutex
	committed []OutputRecord
	open      map[string]*memTxn
	gen       map[string]int  // last generation of each name
	ended     map[string]bool // committable → committed (true) or aborted (false)
	aborted   int
}

type memTxn struct {
	gen      int
	recs     []OutputRecord
	prepared bool
}

// OutputRecord is one record written to an output (the oracle reads them).
type OutputRecord = verify.Record

// NewMemoryOutput returns an empty output.
func NewMemoryOutput() *MemoryOutput {
	return &MemoryOutput{open: map[string]*memTxn{}, gen: map[string]int{}, ended: map[string]bool{}}
}

func committable(txn string, gen int) string { return txn + "#" + strconv.Itoa(gen) }

// Write implements TxnOutput.
func (m *MemoryOutput) Write(txn string, key, value []byte) error {
	return m.WriteAt(txn, key, value, time.Time{})
}

// WriteAt implements TimedWriter: the record's timestamp is at, as a
// Kafka producer's is (the zero time: none).
func (m *MemoryOutput) WriteAt(txn string, key, value []byte, at time.Time) error {
	var ms int64
	if !at.IsZero() {
		ms = at.UnixMilli()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.open[txn]
	if t == nil {
		m.gen[txn]++
		t = &memTxn{gen: m.gen[txn]}
		m.open[txn] = t
	}
	if t.prepared {
		return fmt.Errorf("write to pre-committed transaction %s", txn)
	}
	t.recs = append(t.recs, OutputRecord{Key: key, Value: value, Time: ms})
	return nil
}

// Prepare implements TxnOutput.
func (m *MemoryOutput) Prepare(txn string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.open[txn]
	if t == nil {
		return "", nil
	}
	t.prepared = true
	return committable(txn, t.gen), nil
}

// Commit implements TxnOutput.
func (m *MemoryOutput) Commit(c string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ok, ended := m.ended[c]; ended {
		if ok {
			return nil
		}
		return fmt.Errorf("transaction %s was aborted", c)
	}
	name, g, _ := strings.Cut(c, "#")
	t := m.open[name]
	if t == nil || strconv.Itoa(t.gen) != g {
		return fmt.Errorf("commit of unknown transaction %s", c)
	}
	if !t.prepared {
		return fmt.Errorf("commit of transaction %s before its pre-commit", c)
	}
	m.committed = append(m.committed, t.recs...)
	delete(m.open, name)
	m.ended[c] = true
	return nil
}

// AbortLingering implements TxnOutput.
func (m *MemoryOutput) AbortLingering(prefix string, from int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, t := range m.open {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(rest, 10, 64); err != nil || n < from {
			continue
		}
		if len(t.recs) > 0 {
			m.aborted++
		}
		m.ended[committable(name, t.gen)] = false
		delete(m.open, name)
	}
	return nil
}

// Committed returns a copy of the committed records in commit order.
func (m *MemoryOutput) Committed() []OutputRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]OutputRecord(nil), m.committed...)
}

// Len is the number of committed records.
func (m *MemoryOutput) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.committed)
}

// Aborted is the number of transactions aborted with records in them.
func (m *MemoryOutput) Aborted() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.aborted
}
