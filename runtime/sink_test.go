package runtime

import (
	"errors"
	"fmt"
	"testing"
)

// losingOutput is a MemoryOutput whose prepared transactions can vanish, as
// Kafka's do when the broker dies with them open or they time out.
type losingOutput struct {
	*MemoryOutput
	lost map[string]bool // committables the "broker" aborted
}

func (l *losingOutput) Commit(c string) error {
	if l.lost[c] {
		return fmt.Errorf("commit %s: %w", c, ErrTxnLost)
	}
	return l.MemoryOutput.Commit(c)
}

func (l *losingOutput) Contains(_ string, r OutputRecord) (bool, error) {
	for _, x := range l.MemoryOutput.Committed() {
		if string(x.Value) == string(r.Value) {
			return true, nil
		}
	}
	return false, nil
}

func TestCommitOrRedo(t *testing.T) {
	recs := []OutputRecord{{Value: []byte(`{"order_id":"o-1"}`)}, {Value: []byte(`{"order_id":"o-2"}`)}}
	prepare := func(out *losingOutput, name string) pendingTxn {
		for _, r := range recs {
			out.Write(name, r.Key, r.Value)
		}
		c, _ := out.Prepare(name)
		return pendingTxn{checkpoint: 7, txn: name, committable: c, records: recs}
	}
	t.Run("commits normally", func(t *testing.T) {
		out := &losingOutput{MemoryOutput: NewMemoryOutput(), lost: map[string]bool{}}
		p := prepare(out, "s/0/3")
		if err := commitOrRedo(out, p); err != nil || out.Len() != 2 {
			t.Fatalf("%v, %d committed", err, out.Len())
		}
	})
	t.Run("writes a lost transaction again, once", func(t *testing.T) {
		out := &losingOutput{MemoryOutput: NewMemoryOutput(), lost: map[string]bool{}}
		p := prepare(out, "s/0/3")
		out.lost[p.committable] = true
		if err := commitOrRedo(out, p); err != nil || out.Len() != 2 {
			t.Fatalf("redo: %v, %d committed", err, out.Len())
		}
		// A second recovery from the same checkpoint finds the records.
		if err := commitOrRedo(out, p); err != nil || out.Len() != 2 {
			t.Fatalf("second recovery: %v, %d committed, want the 2 once", err, out.Len())
		}
	})
	t.Run("without a redo log the loss is an error", func(t *testing.T) {
		out := &losingOutput{MemoryOutput: NewMemoryOutput(), lost: map[string]bool{}}
		p := prepare(out, "s/0/3")
		out.lost[p.committable] = true
		p.records = nil
		if err := commitOrRedo(out, p); !errors.Is(err, ErrTxnLost) {
			t.Fatalf("err = %v, want ErrTxnLost", err)
		}
	})
}

func TestSinkStateKeepsTheRedoLog(t *testing.T) {
	st := sinkState{owner: 1, nextSeq: 9, pending: []pendingTxn{
		{checkpoint: 4, txn: "p/1/7", committable: "p/1/7#1", records: []OutputRecord{{Key: []byte("c-1"), Value: []byte("v")}}},
		{checkpoint: 5, txn: "p/1/8", committable: "p/1/8#1"},
	}}
	got, err := decodeSinkState(st.encode())
	if err != nil {
		t.Fatal(err)
	}
	if got.owner != 1 || got.nextSeq != 9 || len(got.pending) != 2 || got.pending[0].txn != "p/1/7" ||
		len(got.pending[0].records) != 1 || string(got.pending[0].records[0].Key) != "c-1" || got.pending[1].records != nil {
		t.Fatalf("round trip: %+v", got)
	}
}
