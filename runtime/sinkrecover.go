package runtime

import (
	"errors"
	"fmt"
	"strings"
)

// errRecoveryStopped is why a sink's recovery gave up: it was stopped (its
// subtask cancelled, a stopped run out of time) between two requests to
// its output. The next recovery does what is left.
var errRecoveryStopped = errors.New("the sink's recovery was stopped")

// recoverSink leaves out as a restart from a checkpoint with these sink
// states would: every pre-committed transaction committed, every later one
// aborted. states are the sink operator's states in that checkpoint (none
// when starting without one); owners are the subtasks to recover, with the
// sequence number to abort from when no state names it. newest is the
// committable of the newest transaction it committed ("" when none). It
// gives up with errRecoveryStopped between two requests to out once stop
// is closed (the subtask cancelled, a stopped run out of time).
func recoverSink(stop <-chan struct{}, out TxnOutput, prefix, op string, states [][]byte, owners func(owner int) bool, mine []int) (nextSeq map[int]int64, newest string, rewritten []rewrittenTxn, err error) {
	nextSeq = map[int]int64{}
	var pending []sinkState
	for _, b := range states {
		st, err := decodeSinkState(b)
		if err != nil {
			return nil, "", nil, fmt.Errorf("sink state of %s/%d: %w", op, st.owner, err)
		}
		if !owners(st.owner) {
			continue
		}
		pending = append(pending, st)
		nextSeq[st.owner] = st.nextSeq
	}
	for _, o := range mine {
		if _, ok := nextSeq[o]; !ok {
			nextSeq[o] = 0
		}
	}
	// Commit what the checkpoint pre-committed first: an output may draw
	// its transactions' ids from a pool (Kafka), and aborting what the
	// failed attempt left open initialises those ids too.
	type lostTxn struct {
		owner int
		t     pendingTxn
		err   error
	}
	var lost []lostTxn
	newestAt := int64(-1)
	for _, st := range pending {
		for _, t := range st.pending {
			if stopped(stop) {
				return nil, "", nil, errRecoveryStopped
			}
			err := out.Commit(t.committable)
			if redoable(out, err) {
				lost = append(lost, lostTxn{st.owner, t, err})
			} else if err != nil {
				return nil, "", nil, fmt.Errorf("commit transaction of %s/%d pre-committed for checkpoint %d: %w", op, st.owner, t.checkpoint, err)
			}
			if t.checkpoint > newestAt {
				newest, newestAt = t.committable, t.checkpoint
			}
		}
	}
	// Then abort what the failed attempt left open, a redo of an earlier
	// recovery included, before a redo: an open transaction holds back
	// read_committed readers, and a redo looks for its records.
	for o, from := range nextSeq {
		if stopped(stop) {
			return nil, "", nil, errRecoveryStopped
		}
		if err := out.AbortLingering(txnPrefix(prefix, op, o), from); err != nil {
			return nil, "", nil, fmt.Errorf("abort lingering transactions of %s/%d: %w", op, o, err)
		}
	}
	for _, st := range pending {
		for _, t := range st.pending {
			if err := out.AbortLingering(strings.TrimSuffix(redoName(t.txn), "0"), 0); err != nil {
				return nil, "", nil, fmt.Errorf("abort lingering transactions of %s/%d: %w", op, st.owner, err)
			}
		}
	}
	for _, l := range lost {
		if stopped(stop) {
			return nil, "", nil, errRecoveryStopped
		}
		n, err := redoLost(stop, out, l.t, l.err)
		if err != nil {
			return nil, "", nil, fmt.Errorf("commit transaction of %s/%d pre-committed for checkpoint %d: %w", op, l.owner, l.t.checkpoint, err)
		}
		if n > 0 {
			rewritten = append(rewritten, rewrittenTxn{owner: l.owner, checkpoint: l.t.checkpoint, records: n})
		}
	}
	return nextSeq, newest, rewritten, nil
}

// rewrittenTxn is a transaction pre-committed for checkpoint by sink
// subtask owner that the output lost, and how many of its records the
// recovery wrote again.
type rewrittenTxn struct {
	owner      int
	checkpoint int64
	records    int
}

// redoable says whether a commit that failed with err is written again:
// the output lost the transaction, and can say what it lacks of it.
func redoable(out TxnOutput, err error) bool {
	_, ok := out.(CommittedChecker)
	return ok && errors.Is(err, ErrTxnLost)
}

// redoName names the transaction that writes again what the output lost of
// txn. Its number lets AbortLingering find a redo that a crash left open
// (prefix txn+"/redo/").
func redoName(txn string) string { return txn + "/redo/0" }

// redoLost writes again what the output lacks of a transaction the restored
// checkpoint pre-committed and whose commit failed with err (ErrTxnLost):
// the output has lost it (an embedded broker that died with the process
// aborts the transactions open at that moment; Kafka does the same to a
// transaction older than its timeout, and a pooled transactional id that
// a later transaction used again no longer knows it). The sink asks the
// output which of the transaction's records its committed output lacks
// (none, when it committed just before the crash or by an earlier redo;
// some, when a commit reached only some partitions; all, when it was
// aborted): the output reads them back from its own log, where an aborted
// transaction's records stay (CommittedChecker). It writes exactly those
// again, in a transaction of its own (redoName). A crash during the redo
// aborts it, and the next recovery finds those records missing again:
// nothing is lost or written twice. Looking for the records gives up when
// stop is closed. It returns how many records it wrote again.
func redoLost(stop <-chan struct{}, out TxnOutput, t pendingTxn, err error) (int, error) {
	checker, ok := out.(CommittedChecker)
	if !ok {
		return 0, err
	}
	ctx, cancel := contextOf(stop)
	defer cancel()
	records, ferr := checker.Prepared(ctx, t.committable)
	if ferr != nil {
		return 0, fmt.Errorf("%w; reading its records back: %w", err, ferr)
	}
	missing, ferr := checker.Missing(ctx, t.committable, records)
	if ferr != nil {
		return 0, fmt.Errorf("%w; looking for its records: %w", err, ferr)
	}
	if len(missing) == 0 {
		return 0, nil
	}
	redo := redoName(t.txn)
	for _, r := range missing {
		if err := out.Write(redo, r.Key, r.Value); err != nil {
			return 0, fmt.Errorf("write %s again: %w", t.txn, err)
		}
	}
	c, err := out.Prepare(redo)
	if err != nil {
		return 0, fmt.Errorf("write %s again: %w", t.txn, err)
	}
	if err := out.Commit(c); err != nil {
		return 0, err
	}
	return len(missing), nil
}
