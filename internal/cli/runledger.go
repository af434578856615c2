package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/checkpoint/badgerstore"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/broker"
	"github.com/faultline-dev/faultline/runtime/kafka/live"
	"github.com/faultline-dev/faultline/runtime/kafka/source"
	"github.com/faultline-dev/faultline/runtime/verify"
)

// openLedger opens the verification ledger at path, with the at-least-once
// periods kept beside it (Ledger.Lenient): the saved ones when the run goes
// on from the job's checkpoints (new ones when none were saved), else new
// ones, removing what an earlier run left.
func openLedger(path string, expect verify.Expect, continues bool, stateDir string) (*verify.Ledger, error) {
	periodsPath := filepath.Join(filepath.Dir(path), verify.PeriodsFile)
	if !continues {
		for _, p := range []string{path, periodsPath} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, exitError{code: 1, err: fmt.Errorf("remove the old verification ledger: %w", err)}
			}
		}
	}
	periods, err := verify.LoadPeriods(periodsPath)
	if err != nil {
		return nil, exitError{code: 1, err: fmt.Errorf("%w: it says when the runs before this one ran at-least-once; start afresh with --fresh", err)}
	}
	l, err := loadLedger(path, expect, continues, stateDir)
	if l != nil {
		l.Lenient = periods
	}
	return l, err
}

func loadLedger(path string, expect verify.Expect, continues bool, stateDir string) (*verify.Ledger, error) {
	if !continues {
		return verify.New(expect)
	}
	l, err := verify.Load(path)
	if err == nil {
		err = l.Adopt(expect)
	}
	switch {
	case errors.Is(err, os.ErrNotExist):
		return verify.New(expect)
	case err != nil:
		return nil, exitError{code: 1, err: fmt.Errorf("%w: it holds what the verification counted of the records the embedded broker has deleted, so the output can no longer be checked from the start; start afresh in another --state-dir", err)}
	case !l.Expect().Equal(expect):
		was := l.Expect()
		return nil, usagef("the runs before this one on %s expected %s by %s with a state TTL of %s, this one would expect %s by %s with %s: give the job and --state-ttl they had, or start afresh in another --state-dir",
			stateDir, was.Kind, was.ID, was.StateTTL, expect.Kind, expect.ID, expect.StateTTL)
	}
	return l, nil
}

// retentionSetup is what the broker's retention needs from a run.
type retentionSetup struct {
	client      kafka.Client
	inputs      map[string]string
	outputStart map[string]map[int32]int64
	sources     map[string]*source.Source
	continues   bool
	ledger      *verify.Ledger
	path        string
	store       *badgerstore.Store
	job         *runtime.Job
	live        *live.LiveVerifier // the UI's, or nil
	logf        func(string, ...any)
}

// startRetention trims the embedded broker's log every --retention-interval
// once the job's output is committed up to a checkpoint of this run, and
// returns what stops it (and waits for it).
func (o *runOptions) startRetention(ctx context.Context, s retentionSetup) func() {
	var output string
	var outStart map[int32]int64
	for t, start := range s.outputStart {
		output, outStart = t, maps.Clone(start)
	}
	ret := broker.NewRetention(broker.RetentionConfig{
		Client: s.client, Inputs: s.inputs, Output: output, Ledger: s.ledger, Path: s.path,
		Checkpoints: func(ctx context.Context) ([]*checkpoint.Completed, error) {
			if _, _, _, ok := s.job.CommittedCheckpoint(); !ok {
				return nil, nil // this run's sources have not started, or nothing of it is committed
			}
			return s.store.All(ctx)
		},
		Start: func(topic string) map[int32]int64 {
			switch {
			case s.continues:
				return nil // the ledger goes on from the start of the log
			case topic == output:
				return outStart
			case s.sources[topic] != nil:
				return s.sources[topic].StartOffsets()
			}
			return nil
		},
		Readers: func() (checkpoint.Offsets, bool) {
			if s.live == nil {
				return nil, true
			}
			return s.live.Positions()
		},
		Every: o.retention,
		Logf:  s.logf,
	})
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ret.Run(rctx)
	}()
	return sync.OnceFunc(func() {
		cancel()
		<-done
	})
}
