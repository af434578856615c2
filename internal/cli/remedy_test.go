package cli

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/checkpoint/badgerstore"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/kafka/broker"
)

// The engine's errors name no flag; the command line adds the way on, once,
// after the engine's words, and the error is still the engine's.
func TestRemediesNameTheFlags(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("open: %w: /s/checkpoints: MANIFEST: bad; the store cannot be repaired", badgerstore.ErrDamaged), "the store cannot be repaired: `faultline run --fresh` starts the job again from nothing"},
		{fmt.Errorf("%w in /typo/checkpoints", badgerstore.ErrNoStore), "no checkpoint store in /typo/checkpoints: is --state-dir right?"},
		{fmt.Errorf("%w: segment 3 is short", broker.ErrLogDamaged), "segment 3 is short; start again from nothing with --fresh or faultline reset"},
		{fmt.Errorf("%w of job orders: checkpoint 7 is damaged", runtime.ErrNoValidCheckpoint), "damaged; start again from nothing with --fresh, or read the input again from its beginning, skipping what the output already holds, with --allow-fresh-start"},
		{fmt.Errorf("%w: savepoint 3 has state of operators the job does not have (enrich)", runtime.ErrNonRestoredState), "(enrich); drop it with --allow-non-restored-state"},
	} {
		got := withRemedy(tc.err)
		if !strings.HasSuffix(got.Error(), tc.want) || !errors.Is(got, tc.err) {
			t.Errorf("%v\n  became %q, want it to end %q", tc.err, got, tc.want)
		}
		if again := withRemedy(got); again.Error() != got.Error() {
			t.Errorf("a second remedy: %q", again)
		}
	}
	plain := errors.New("connect to Kafka at x:1: refused")
	if withRemedy(plain) != plain {
		t.Error("an error with no remedy changed")
	}
}
