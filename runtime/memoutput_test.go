package runtime

import "testing"

func TestMemoryOutputTransactions(t *testing.T) {
	m := NewMemoryOutput()
	if c, err := m.Prepare("p/0"); err != nil || c != "" {
		t.Fatalf("prepare of an empty transaction: %q %v", c, err)
	}
	m.Write("p/0", nil, []byte("a"))
	m.Write("p/1", nil, []byte("b"))
	c0, _ := m.Prepare("p/0")
	if m.Len() != 0 {
		t.Fatal("prepared records are visible before commit")
	}
	if err := m.Commit(c0); err != nil || m.Len() != 1 {
		t.Fatalf("commit: %v, %d visible", err, m.Len())
	}
	if err := m.Commit(c0); err != nil || m.Len() != 1 {
		t.Fatalf("second commit is not a no-op: %v, %d visible", err, m.Len())
	}
	c1, _ := m.Prepare("p/1")
	m.AbortLingering("p/", 1)
	if err := m.Commit(c1); err == nil {
		t.Fatal("committing an aborted transaction succeeded")
	}
	// The name can be used again: a new generation, not the aborted one.
	m.Write("p/1", nil, []byte("c"))
	c1b, _ := m.Prepare("p/1")
	if c1b == c1 {
		t.Fatal("a reused name gave the same committable")
	}
	if err := m.Commit(c1b); err != nil || m.Len() != 2 {
		t.Fatalf("commit of the reused name: %v, %d visible", err, m.Len())
	}
	// Lingering aborts only touch names from the given number on.
	m.Write("p/3", nil, []byte("x"))
	m.Write("p/7", nil, []byte("y"))
	m.AbortLingering("p/", 5)
	c3, _ := m.Prepare("p/3")
	if err := m.Commit(c3); err != nil || m.Len() != 3 {
		t.Fatalf("p/3 was aborted though it is below 5: %v", err)
	}
}
