package sink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/kafka/internal/kafkatest"
)

// A transaction the broker aborted behind the sink's back (its timeout
// here, the embedded broker's death in a crash) is read back from the log:
// exactly its records, in every partition it wrote, not those another
// producer committed in between; the committed output lacks all of them
// until they are written again, and then none. A committable of an older
// version, without the transaction's ends, reads the same records.
func TestOutputReadsALostTransactionBackFromTheLog(t *testing.T) {
	_, c, cl := kafkatest.EmbeddedClient(t)
	lost, err := NewOutput(c, cl, "revenue", ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer lost.Close()
	lost.WithTransactionTimeout(time.Second)
	other, err := NewOutput(c, cl, "revenue", ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var want []string
	for i := range 40 {
		key := []byte(fmt.Sprintf("c-%d", i%7))
		v := fmt.Sprintf(`{"order_id":"o-%d"}`, i)
		if err := lost.Write("lost/0", key, []byte(v)); err != nil {
			t.Fatal(err)
		}
		want = append(want, v)
		if err := other.Write("other/0", key, []byte(fmt.Sprintf(`{"order_id":"x-%d"}`, i))); err != nil {
			t.Fatal(err)
		}
		if i%10 == 9 { // interleave the two producers' batches in the log
			if err := lost.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := other.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	cl1, err := lost.Prepare("lost/0")
	if err != nil {
		t.Fatal(err)
	}
	c2, err := other.Prepare("other/0")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Commit(c2); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := lost.Commit(cl1); !errors.Is(err, runtime.ErrTxnLost) {
		t.Fatalf("commit after the timeout: %v, want ErrTxnLost", err)
	}
	parts := strings.Split(cl1, "|")
	old := strings.Join(parts[:4], "|")
	for _, committable := range []string{cl1, old} {
		recs, err := lost.Prepared(context.Background(), committable)
		if err != nil {
			t.Fatal(err)
		}
		if got := valuesSorted(recs); strings.Join(got, " ") != strings.Join(sorted(want), " ") {
			t.Fatalf("%s read back %d records %v, want the %d it wrote", committable, len(got), got, len(want))
		}
		missing, err := lost.Missing(context.Background(), committable, recs)
		if err != nil || len(missing) != len(want) {
			t.Fatalf("missing %d, %v; want all %d", len(missing), err, len(want))
		}
	}
	recs, _ := lost.Prepared(context.Background(), cl1)
	for _, r := range recs {
		if err := other.Write("redo/0", r.Key, r.Value); err != nil {
			t.Fatal(err)
		}
	}
	cr, _ := other.Prepare("redo/0")
	if err := other.Commit(cr); err != nil {
		t.Fatal(err)
	}
	if missing, err := lost.Missing(context.Background(), cl1, recs); err != nil || len(missing) != 0 {
		t.Fatalf("after the redo: missing %d, %v", len(missing), err)
	}
}

func valuesSorted(recs []runtime.OutputRecord) []string {
	var vs []string
	for _, r := range recs {
		vs = append(vs, string(r.Value))
	}
	return sorted(vs)
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }
