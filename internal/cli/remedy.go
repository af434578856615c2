package cli

// The engine says what went wrong; what to do about it is said here, in
// the command line's words (its flags and commands).

import (
	"errors"
	"strings"

	"github.com/faultline-dev/faultline/checkpoint/badgerstore"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/kafka/broker"
)

// remedies are the ways on from errors of the engine that a flag or a
// command of faultline's resolves, each after a separator.
var remedies = []struct {
	err       error
	sep, says string
}{
	{badgerstore.ErrDamaged, ": ", "`faultline run --fresh` starts the job again from nothing"},
	{badgerstore.ErrNoStore, ": ", "is --state-dir right?"},
	{broker.ErrLogDamaged, "; ", "start again from nothing with --fresh or faultline reset"},
	{runtime.ErrNoValidCheckpoint, "; ", "start again from nothing with --fresh, or read the input again from its beginning, skipping what the output already holds, with --allow-fresh-start"},
	{runtime.ErrNonRestoredState, "; ", "drop it with --allow-non-restored-state"},
}

// withRemedy is err with the way on from it added to its message, when
// the command line has one (err itself when not, or when the message
// says it already).
func withRemedy(err error) error {
	if err == nil {
		return nil
	}
	for _, r := range remedies {
		if errors.Is(err, r.err) && !strings.Contains(err.Error(), r.says) {
			return remedied{err, r.sep + r.says}
		}
	}
	return err
}

// remedied is an error with a remedy after its message; it unwraps to
// the error.
type remedied struct {
	err   error
	extra string
}

func (r remedied) Error() string { return r.err.Error() + r.extra }
func (r remedied) Unwrap() error { return r.err }
