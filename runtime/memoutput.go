package runtime

import (
	"fmt"
	"strings"
	"sync"
)

// MemoryOutput is an in-memory transactional topic, a stand-in for a Kafka
// topic written with transactions: records of a transaction become visible
// to readers (Committed) only when it commits, and an aborted transaction's
// records are never seen. It outlives job attempts, as an external system
// would. Safe for concurrent use.
type MemoryOutput struct {
	mu        sync.Mutex
	committed []OutputRecord
	open      map[string][]OutputRecord
	prepared  map[string]bool
	done      map[string]bool // committed or aborted txn ids
	aborted   int
}

// OutputRecord is one record written to an output.
type OutputRecord struct {
	Key, Value []byte
}

// NewMemoryOutput returns an empty output.
func NewMemoryOutput() *MemoryOutput {
	return &MemoryOutput{open: map[string][]OutputRecord{}, prepared: map[string]bool{}, done: map[string]bool{}}
}

// Write implements TxnOutput.
func (m *MemoryOutput) Write(txn string, key, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done[txn] {
		return fmt.Errorf("write to finished transaction %s", txn)
	}
	if m.prepared[txn] {
		return fmt.Errorf("write to pre-committed transaction %s", txn)
	}
	m.open[txn] = append(m.open[txn], OutputRecord{Key: key, Value: value})
	return nil
}

// Prepare implements TxnOutput.
func (m *MemoryOutput) Prepare(txn string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done[txn] {
		return fmt.Errorf("pre-commit of finished transaction %s", txn)
	}
	if _, ok := m.open[txn]; !ok {
		m.open[txn] = nil
	}
	m.prepared[txn] = true
	return nil
}

// Commit implements TxnOutput.
func (m *MemoryOutput) Commit(txn string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done[txn] {
		return nil
	}
	recs, ok := m.open[txn]
	if !ok {
		return fmt.Errorf("commit of unknown transaction %s", txn)
	}
	m.committed = append(m.committed, recs...)
	delete(m.open, txn)
	delete(m.prepared, txn)
	m.done[txn] = true
	return nil
}

// Abort implements TxnOutput.
func (m *MemoryOutput) Abort(txn string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.abortLocked(txn)
	return nil
}

func (m *MemoryOutput) abortLocked(txn string) {
	if m.done[txn] {
		return
	}
	if _, ok := m.open[txn]; ok {
		m.aborted++
	}
	delete(m.open, txn)
	delete(m.prepared, txn)
	m.done[txn] = true
}

// AbortOpen implements TxnOutput.
func (m *MemoryOutput) AbortOpen(prefix string, keep map[string]bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for txn := range m.open {
		if strings.HasPrefix(txn, prefix) && !keep[txn] {
			m.abortLocked(txn)
		}
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
