package verify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/runtime/spec"
)

// Verification is the oracle's verdict on the committed output.
type Verification struct {
	Expected   int `json:"expected"`
	Committed  int `json:"committed"`
	Duplicates int `json:"duplicates"`
	// DuplicatesAtLeastOnce are those of Duplicates with a copy committed
	// while the job ran at-least-once (see Periods): the expected price of
	// not aligning barriers, counted apart, never failing an exactly-once
	// verdict.
	DuplicatesAtLeastOnce int `json:"duplicates_at_least_once,omitempty"`
	Lost                  int `json:"lost"`
	Unexpected            int `json:"unexpected"`
	// BadInput counts input records that are not orders or payments at
	// all (poison): no output is expected for them.
	BadInput int `json:"bad_input,omitempty"`
	// NotJoined counts the paid orders whose order and payment are more
	// than the join's state TTL apart in event time: the join does not
	// join them, so they are not expected.
	NotJoined int `json:"not_joined,omitempty"`
	// AfterCheckpoint counts, in at-least-once runs stopped before the end,
	// the output records made from input read after the last completed
	// checkpoint: a sink without aligned barriers or transactions lets
	// them out before a checkpoint covers them. They are neither expected
	// nor unexpected; the next run reads their input again.
	AfterCheckpoint int `json:"after_checkpoint,omitempty"`
	// InFlight counts, in runs stopped before the end, the expected paid
	// orders that the last completed checkpoint held in flight (an
	// unaligned one stores records with its snapshot): its committed output
	// cannot hold them yet, a run restored from it processes them. They
	// are neither expected nor lost.
	InFlight int `json:"in_flight,omitempty"`
	// Ahead counts, in runs stopped before the end, the output records
	// past the newest valid checkpoint that newer checkpoints, found
	// damaged since, had committed (a transaction committed cannot be
	// taken back): their input lies after that checkpoint, and the next
	// run, restored from it, skips them (see Held.Ahead). They are neither
	// expected nor unexpected.
	Ahead int  `json:"ahead_of_checkpoint,omitempty"`
	OK    bool `json:"ok"`
	// Guarantee is what OK was judged against: exactly-once (no duplicates,
	// nothing lost) or at-least-once (nothing lost; duplicates are the
	// expected price of not aligning barriers).
	Guarantee string `json:"guarantee"`
	// NotDone says why the output could not be checked at all (the state
	// dir with the broker's log was removed under the run): the counts are
	// then not known, and OK is false.
	NotDone string `json:"not_done,omitempty"`
	// Off says why the output was not checked: the job spec turned the
	// verification off (verify: false). The counts are not known, and OK
	// is false: nothing was shown to be exactly once.
	Off string `json:"off,omitempty"`
}

// InputReader yields a job's raw input records, read directly from where
// the job reads them. A read gives up with ctx's error when ctx ends.
type InputReader interface {
	// ReadInput calls f with every record of topic below bounds (partition
	// → offset; nil: everything there is), its event time in Unix
	// milliseconds (0: not known) and the topic's watermark as of it: the
	// least, over the partitions read, of the newest event time read of
	// each, a partition read to its end left out (0: none yet, or not
	// known). It is called for several topics at once.
	ReadInput(ctx context.Context, topic string, bounds map[int32]int64, f func(value []byte, eventTime, watermark int64) error) error
	// ReadInputAfter calls f with every record of topic from bounds on
	// (partition → offset; a partition not named: from its start) to the
	// end there is now.
	ReadInputAfter(ctx context.Context, topic string, bounds map[int32]int64, f func(value []byte, eventTime, watermark int64) error) error
}

// Expect is what the committed output of a job must hold.
type Expect struct {
	// Kind is the job spec's verify kind: "paid-orders" (every order that
	// has a payment, exactly once) or "orders" (every order exactly once).
	Kind string
	// Inputs and Joined are what Kind means (spec.Relation): the input
	// topics, the expected records' first, and whether a record is
	// expected only when the second input has its partner.
	Inputs []string
	Joined bool
	// StateTTL is the join's state TTL: a paid order whose order and
	// payment are further apart in event time is not expected (0: every
	// paid order is).
	StateTTL time.Duration
	// ID is the field that identifies a record in the input and the
	// output (the job spec's id): records are counted by it.
	ID string
}

// Equal reports whether e and o expect the same.
func (e Expect) Equal(o Expect) bool {
	return e.Kind == o.Kind && slices.Equal(e.Inputs, o.Inputs) && e.Joined == o.Joined && e.StateTTL == o.StateTTL && e.ID == o.ID
}

// ExpectOf is what job's output must hold.
func ExpectOf(job *spec.Job) Expect {
	e := Expect{Kind: job.Verify, Inputs: job.Relation.Inputs, Joined: job.Relation.Joined, ID: job.ID}
	for _, op := range job.Operators {
		e.StateTTL = max(e.StateTTL, op.StateTTL) // the join's
	}
	return e
}

// Verify checks the committed output of a job against its input, read
// directly by in and decoded on its own, independently of the job's
// operators. guarantee is "exactly-once" or "at-least-once". bounds limits
// the input to the offsets a checkpoint covered; nil means the whole
// (bounded) input.
func Verify(ctx context.Context, in InputReader, expect Expect, guarantee string, bounds map[string]map[int32]int64, out []Record) (Verification, error) {
	l, err := New(expect)
	if err != nil {
		return Verification{}, err
	}
	return VerifyOn(ctx, l, in, guarantee, bounds, out)
}

// VerifyOn is Verify going on from what ledger l has accounted for already
// (records an earlier run read before the embedded broker deleted them): in
// reads the input from where l stopped, out is the output after l's
// position. It adds everything to l.
func VerifyOn(ctx context.Context, l *Ledger, in InputReader, guarantee string, bounds map[string]map[int32]int64, out []Record) (Verification, error) {
	return VerifyHeld(ctx, l, in, guarantee, bounds, Held{}, Records(out))
}

// OutputReader hands every record of a job's committed output to f, in any
// order, one call at a time; an error of f ends the read with it.
type OutputReader func(ctx context.Context, f func(Record) error) error

// Records is the OutputReader of records read already.
func Records(out []Record) OutputReader {
	return func(_ context.Context, f func(Record) error) error {
		for _, r := range out {
			if err := f(r); err != nil {
				return err
			}
		}
		return nil
	}
}

// Held are the order ids that a stopped run's newest valid checkpoint (the
// one bounds come from) accounts for other than by its input offsets.
type Held struct {
	// InFlight are the ids of the records it holds in flight (an unaligned
	// checkpoint): the output committed as of it cannot hold them yet.
	InFlight []string
	// Ahead are the ids the committed output holds past it, committed by
	// newer checkpoints found damaged since: a run restored from it skips
	// them when the job emits them again.
	Ahead []string
}

// VerifyHeld is VerifyOn for output committed as of a checkpoint that
// holds records in flight or is older than output the job committed (see
// Held): in-flight ids are not counted as expected or lost, and ids ahead
// of it whose input lies after bounds not as unexpected.
func VerifyHeld(ctx context.Context, l *Ledger, in InputReader, guarantee string, bounds map[string]map[int32]int64, held Held, out OutputReader) (Verification, error) {
	topics := l.inputs[:min(len(l.inputs), 1)]
	if l.joined {
		topics = l.inputs
	}
	if err := readInputs(ctx, l, in, topics, bounds); err != nil {
		return Verification{}, err
	}
	err := out(ctx, func(r Record) error {
		id, ok := l.id.Of(r.Value)
		if !ok {
			return fmt.Errorf("output record %q: not JSON", r.Value)
		}
		l.Output(id, true, r.Time)
		return nil
	})
	if err != nil {
		return Verification{}, err
	}
	res := l.Result()
	v := Verification{Expected: res.Expected, Committed: res.Committed, Duplicates: res.Duplicates,
		DuplicatesAtLeastOnce: res.DuplicatesAtLeastOnce, Lost: res.Lost,
		Unexpected: res.Unexpected, BadInput: res.BadInput, NotJoined: res.NotJoined, Guarantee: guarantee}
	for _, id := range held.InFlight {
		if l.Missing([]byte(id)) {
			v.InFlight++
		}
	}
	v.Expected -= v.InFlight
	v.Lost -= v.InFlight
	ahead := map[string]bool{}
	for _, id := range held.Ahead {
		ahead[id] = true
	}
	if v.Unexpected > 0 && bounds != nil && len(ahead) > 0 {
		n, err := afterCheckpoint(ctx, l, in, topics, bounds, func(id string, _ bool) bool { return ahead[id] })
		if err != nil {
			return Verification{}, err
		}
		v.Unexpected -= n
		v.Ahead = n
	}
	// Output an at-least-once job let out before a checkpoint covered its
	// input: the whole run's, or, in an exactly-once run, what was written
	// in an at-least-once period (a run that ended while it lasted).
	if v.Unexpected > 0 && bounds != nil && (guarantee == "at-least-once" || len(l.Lenient.Spans()) > 0) {
		lenientOnly := guarantee != "at-least-once"
		after, err := afterCheckpoint(ctx, l, in, topics, bounds, func(id string, lenientCopy bool) bool {
			return !ahead[id] && (lenientCopy || !lenientOnly)
		})
		if err != nil {
			return Verification{}, err
		}
		v.Unexpected -= after
		v.AfterCheckpoint = after
	}
	v.OK = v.Lost == 0 && v.Unexpected == 0 && (v.Duplicates == v.DuplicatesAtLeastOnce || guarantee == "at-least-once")
	return v, nil
}

// readInputs accounts for the input topics below bounds (nil: all of
// them) in l, the topics read at once: an id's order and payment then come
// at about the same time, and what l keeps of the side that came first
// (its event time, until the other) stays small however long the input;
// every 65,536 records l forgets those the join's TTL has expired by the
// least watermark of the topics (PruneAt), the orders never paid among
// them. By the watermark, not by the newest time read: the partitions are
// read at once, each at its pace, and a partner may still come from one
// that lags.
func readInputs(ctx context.Context, l *Ledger, in InputReader, topics []string, bounds map[string]map[int32]int64) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs = make([]error, len(topics))
		n    int                          // inputs accounted for, under mu
		wm   = make([]int64, len(topics)) // each topic's watermark, under mu
	)
	for i, topic := range topics {
		var b map[int32]int64
		if bounds != nil {
			b = bounds[topic]
			if b == nil {
				b = map[int32]int64{}
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = in.ReadInput(ctx, topic, b, func(v []byte, t, w int64) error {
				id, _ := l.id.Of(v) // not JSON or no id: bad input; read outside the lock
				mu.Lock()
				defer mu.Unlock()
				l.Input(topic, id, t)
				wm[i] = max(wm[i], w)
				if n++; n%(1<<16) == 0 && len(topics) == 2 {
					l.PruneAt(min(wm[0], wm[1]))
				}
				return nil
			})
			if errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	// The first error that is not the others' cancellation, or the one.
	var first error
	for _, err := range errs {
		if err != nil && (first == nil || errors.Is(first, context.Canceled)) {
			first = err
		}
	}
	return first
}

// afterCheckpoint counts the ids l finds unexpected that the input after
// bounds (the last completed checkpoint's offsets) does expect, of those
// keep takes (lenientCopy: a copy was written in an at-least-once period):
// output an at-least-once job let out before a checkpoint covered its
// input, or that newer checkpoints committed. l is left as it was: the
// next run accounts for that input itself.
func afterCheckpoint(ctx context.Context, l *Ledger, in InputReader, topics []string, bounds map[string]map[int32]int64, keep func(id string, lenientCopy bool) bool) (int, error) {
	const order, payment = 1, 2
	sides := map[string]byte{}
	l.EachUnexpected(func(id string) { sides[id] = 0 })
	l.Each(func(id string, o, p, _ bool, _ int, lenientCopy bool) {
		if _, unexpected := sides[id]; unexpected && !keep(id, lenientCopy) {
			delete(sides, id)
			return
		}
		if b, ok := sides[id]; ok {
			if o {
				b |= order
			}
			if p {
				b |= payment
			}
			sides[id] = b
		}
	})
	for _, topic := range topics {
		side := byte(order)
		if l.second(topic) {
			side = payment
		}
		err := in.ReadInputAfter(ctx, topic, bounds[topic], func(v []byte, _, _ int64) error {
			if id, ok := l.id.Of(v); ok {
				if b, held := sides[string(id)]; held {
					sides[string(id)] = b | side
				}
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("read the input after the last checkpoint: %w", err)
		}
	}
	want := byte(order)
	if l.joined {
		want = order | payment
	}
	n := 0
	for _, b := range sides {
		if b&want == want {
			n++
		}
	}
	return n, nil
}

// Record is one record written to an output.
type Record struct {
	Key, Value []byte
	// Time is the record's timestamp in Unix milliseconds, where the
	// reader knows it (0: not known).
	Time int64
	// Watermark is the topic's as of the record, where the reader keeps
	// one (see InputReader.ReadInput; 0: none), and Partition the
	// record's, where the reader says.
	Watermark int64
	Partition int32
}

func (r Record) String() string { return fmt.Sprintf("%q=%q", r.Key, r.Value) }
