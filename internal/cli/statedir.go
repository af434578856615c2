package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/checkpoint/badgerstore"
	"github.com/faultline-dev/faultline/internal/atomicfile"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/spec"
	"github.com/faultline-dev/faultline/runtime/view"
)

// inputFile is the file in the state dir that says which input the runs on
// it read: the embedded broker's log holds that input, and a run that goes
// on from the state dir must read the same.
const inputFile = "input.json"

// inputRecord is the content of inputFile.
type inputRecord struct {
	Job     string `json:"job"`
	Seed    int64  `json:"seed"`
	Records int64  `json:"records"` // 0: unbounded (until stopped)
	// Written is how many of the records (of an input of --records
	// Written) the broker's log is known to hold whole: set once a bounded
	// input has been written, so that the log can be checked for them.
	Written int64 `json:"written,omitempty"`
}

// readInputRecord reads the state dir's inputFile; nil when there is none
// (a new state dir, or one from before the file existed).
func readInputRecord(stateDir string) (*inputRecord, error) {
	b, err := os.ReadFile(filepath.Join(stateDir, inputFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", inputFile, err)
	}
	var r inputRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s in %s is damaged (%v); start again from nothing with --fresh", inputFile, stateDir, err)
	}
	return &r, nil
}

// writeInputRecord replaces the state dir's inputFile with r.
func writeInputRecord(stateDir string, r inputRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(stateDir, inputFile), append(b, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", inputFile, err)
	}
	return nil
}

// inputRecorder returns what writes r into the state dir's inputFile, once:
// later calls return what the first one did. A run calls it at the first
// moment the state dir holds something of its input, just before: the
// input writer's first record into the embedded broker's log (startKafka),
// or else the job's first completed checkpoint, whose offsets point into
// the input (inputStore). A run that fails before then (an unreachable
// --brokers) leaves no record, so the next run is not refused for one.
func inputRecorder(stateDir string, r inputRecord) func() error {
	return sync.OnceValue(func() error { return writeInputRecord(stateDir, r) })
}

// inputStore is the checkpoint store as the job sees it: the first
// checkpoint or savepoint it adds records the run's input first. Every
// other method is the Badger store's, so that the engine still finds the
// store's optional abilities.
type inputStore struct {
	*badgerstore.Store
	recordInput func() error
}

var (
	_ checkpoint.Store  = inputStore{}
	_ runtime.Corrupter = inputStore{}
)

// Add records the run's input, then adds c.
func (s inputStore) Add(ctx context.Context, c *checkpoint.Completed) error {
	if err := s.recordInput(); err != nil {
		return err
	}
	return s.Store.Add(ctx, c)
}

// checkInput refuses to go on from a state dir whose input is not the one
// this run would read, naming what the state dir holds; generated says
// that faultline writes the input (the seed matters). It returns what to
// record in inputFile.
func (o *runOptions) checkInput(stateDir, job string, generated bool) (inputRecord, error) {
	want := inputRecord{Job: job, Seed: o.seed, Records: o.records}
	had, err := readInputRecord(stateDir)
	if err != nil || had == nil {
		return want, err
	}
	want.Written = had.Written
	fresh := "or start again from nothing with --fresh"
	switch {
	case had.Job != job:
		return want, usagef("the state dir %s holds the runs of job %s, and this is job %s: give another --state-dir, %s", stateDir, had.Job, job, fresh)
	case generated && had.Seed != o.seed:
		return want, usagef("the state dir %s holds input generated with --seed %d, and this run would generate --seed %d: give --seed %d to go on, %s", stateDir, had.Seed, o.seed, had.Seed, fresh)
	case had.Records == 0 && o.records > 0:
		return want, usagef("the state dir %s holds an unbounded input (the runs before had no --records), and this run reads --records %d: leave out --records to go on, %s", stateDir, o.records, fresh)
	case had.Records > 0 && o.records == 0:
		return want, usagef("the state dir %s holds a bounded input of --records %d, and this run would read an unbounded one: give --records %d (or more) to go on, %s", stateDir, had.Records, had.Records, fresh)
	case o.records < had.Records:
		return want, usagef("the state dir %s holds an input of --records %d, and this run reads only %d: the output already holds records made from the rest; give --records %d or more, %s", stateDir, had.Records, o.records, had.Records, fresh)
	}
	return want, nil
}

// earlierRuns says what the state dir holds of earlier runs of any job,
// e.g. "checkpoints (newest 7)", "the embedded broker's log"; none for a
// new state dir. Without a store (nil) it says what the rest of the state
// dir holds.
func earlierRuns(ctx context.Context, store *badgerstore.Store, stateDir string, embedded bool) ([]string, error) {
	var held []string
	if store != nil {
		all, err := store.All(ctx)
		if err != nil {
			return nil, err
		}
		damaged, err := store.Damaged(ctx)
		if err != nil {
			return nil, err
		}
		switch {
		case len(all) > 0:
			held = append(held, fmt.Sprintf("checkpoints of job %s (newest %d)", all[len(all)-1].Job, all[len(all)-1].ID))
		case len(damaged) > 0 || store.MaxID() > 0:
			held = append(held, "the records of checkpoints")
		}
	}
	if embedded {
		if entries, err := os.ReadDir(filepath.Join(stateDir, "kafka")); err == nil && len(entries) > 0 {
			held = append(held, "the embedded broker's log (the input and the output)")
		}
	}
	for _, f := range []struct{ path, what string }{
		{filepath.Join("verify", "ledger"), "a verification ledger"},
		{inputFile, "the record of its input (" + inputFile + ")"},
	} {
		if _, err := os.Stat(filepath.Join(stateDir, f.path)); err == nil {
			held = append(held, f.what)
		}
	}
	return held, nil
}

// refuseSecondCopy refuses a headless run that would start afresh on a
// state dir that holds earlier runs: it would write its output a second
// time beside theirs.
func refuseSecondCopy(stateDir string, held []string) error {
	return usagef("the state dir %s already holds %s of an earlier run, so a new run would write its output a second time beside it: go on from where it stopped with --resume, or start again from nothing with --fresh (which deletes them)",
		stateDir, strings.Join(held, ", "))
}

// stateDirKept is what runs keep in a state dir besides the checkpoint
// store, relative to it: what clearStateDir deletes. The log file stays.
var stateDirKept = []string{"kafka", "verify", inputFile, inputFile + ".tmp", badRecordFile, badRecordFile + ".tmp", "work"}

// clearStateDir deletes everything earlier runs left in the state dir: the
// checkpoints and savepoints, the embedded broker's log, the verification
// ledger, inputFile and badRecordFile (stateDirKept). The store must be
// open, so that no other process uses the state dir.
func clearStateDir(ctx context.Context, store *badgerstore.Store, stateDir string) error {
	if err := store.Clear(ctx); err != nil {
		return err
	}
	for _, p := range stateDirKept {
		if err := os.RemoveAll(filepath.Join(stateDir, p)); err != nil {
			return err
		}
	}
	return nil
}

// freshStateDir empties the state dir for a clean start, as `run --fresh`
// and `reset` do: it opens the checkpoint store, which takes the state
// dir's lock (removing a store too damaged to open, never one another
// process holds: that is an error wrapping badgerstore.ErrLocked), and
// deletes everything runs keep there (clearStateDir). It returns the
// store, open and empty.
func freshStateDir(ctx context.Context, stateDir string, retained int) (*badgerstore.Store, error) {
	store, err := openStoreFresh(checkpointDir(stateDir), retained)
	if err != nil {
		return nil, err
	}
	if err := clearStateDir(ctx, store, stateDir); err != nil {
		store.Close()
		return nil, err
	}
	return store, nil
}

// openStoreFresh opens the state dir's checkpoint store for a clean start:
// a store too damaged to open is removed first (never one that another
// process holds).
func openStoreFresh(dir string, retained int) (*badgerstore.Store, error) {
	s, err := openStore(dir, retained)
	if err == nil || errors.Is(err, badgerstore.ErrLocked) {
		return s, err
	}
	if rerr := badgerstore.Remove(dir); rerr != nil {
		return nil, fmt.Errorf("%w; and it cannot be removed: %v", err, rerr)
	}
	return openStore(dir, retained)
}

// checkInputWhole refuses a run that goes on from the runs before it with
// no checkpoint of the job left to restore (every one deleted or lost)
// when its input or output no longer starts at its beginning: such a run
// reads the input again from the start and skips what the output already
// holds, and the records the broker deleted could neither be read again
// nor be skipped.
func (r *runState) checkInputWhole() error {
	if !r.continues || r.restorable || r.o.fromSavepoint != 0 {
		return nil
	}
	topics := slices.Collect(maps.Values(r.p.logicalTopics()))
	for _, op := range r.p.job.Operators {
		if op.Type == spec.TypeSink {
			topics = append(topics, r.p.topicMap[op.Name])
		}
	}
	slices.Sort(topics)
	for _, topic := range slices.Compact(topics) {
		starts, err := kafka.StartOffsets(r.cl, topic)
		if err != nil {
			return exitError{code: 1, err: err}
		}
		for _, part := range slices.Sorted(maps.Keys(starts)) {
			if at := starts[part]; at > 0 {
				return exitError{code: 1, err: fmt.Errorf("the state dir %s holds no checkpoint of job %s to go on from, and the broker has deleted the first %s records of %s/%d: a start from the beginning could neither read them again nor tell what output they made; start again from nothing with --fresh",
					r.stateDir, r.p.job.Name, thousands(at), topic, part)}
			}
		}
	}
	return nil
}

// forgetMemoryCheckpoints plays the jobmanager checkpoint storage
// (Flink: JobManagerCheckpointStorage, which keeps completed checkpoints
// in the JobManager's memory): the store on disk stands in for the
// memory of the process, so the checkpoints earlier runs left in it died
// with them and are deleted before this run looks for one to resume.
// Savepoints stay: Flink writes them to a directory of their own. The
// run then starts over from the beginning of its input, and its sinks
// skip what the output already holds (refused when the broker deleted
// part of the input, checkInputWhole).
func (r *runState) forgetMemoryCheckpoints(ctx context.Context) error {
	if r.o.checkpointStorage != "jobmanager" {
		return nil
	}
	if r.o.kafka.brokers == "" && r.o.retention > 0 {
		r.notices = append(r.notices, view.Notice{
			Text:   "jobmanager checkpoint storage: the embedded broker keeps the whole input (no retention)",
			Advice: "a crash loses the checkpoints, and the next run starts over from the beginning of the input, which must still be there"})
	}
	all, err := r.store.All(ctx)
	if err != nil {
		return err
	}
	var gone []int64
	for _, c := range all {
		if c.Kind != checkpoint.KindCheckpoint {
			continue
		}
		if err := r.store.Delete(ctx, c.ID); err != nil {
			return fmt.Errorf("forget checkpoint %d of the run before (jobmanager checkpoint storage): %w", c.ID, err)
		}
		gone = append(gone, c.ID)
	}
	if len(gone) > 0 {
		r.notices = append(r.notices, view.Notice{
			Text: fmt.Sprintf("jobmanager checkpoint storage: the %d checkpoints of the run before lived in its process's memory and are gone with it (newest %d)", len(gone), slices.Max(gone)),
			Advice: "the job starts over from the beginning of its input; its sinks skip what the output already holds. " +
				"--checkpoint-storage filesystem keeps checkpoints in the state dir, where they outlive a crash"})
	}
	return nil
}
