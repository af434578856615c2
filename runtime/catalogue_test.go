package runtime

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/runtime/fault"
)

// The fault menu says what the fault it injects does: the factor, the
// length and the count of MenuFault's defaults are the ones its line
// names, so that neither can change alone.
func TestMenuSaysWhatMenuFaultDoes(t *testing.T) {
	tenth := map[float64]string{10: "a tenth"}
	for _, e := range Catalogue {
		f := MenuFault(e.Kind, "join/0", topicOrders, 0)
		var want []string
		if f.Factor != 0 {
			want = append(want, tenth[f.Factor])
		}
		if f.For != 0 {
			want = append(want, strconv.Itoa(int(f.For.Seconds()))+" s")
		}
		if f.Count != 0 {
			want = append(want, "next "+strconv.Itoa(f.Count))
		}
		for _, w := range want {
			if w == "" || !strings.Contains(e.Menu, w) {
				t.Errorf("%s: the menu says %q, MenuFault gives factor %v, for %s, count %d", e.Kind, e.Menu, f.Factor, f.For, f.Count)
			}
		}
	}
}

// A poison fault writes into a topic the job reads: the first when it names
// none, and never one the job does not read; a task fault names a subtask
// the job has.
func TestCheckFaultHoldsTheFaultToTheJob(t *testing.T) {
	job := testJob.Spec()
	f := Fault{Kind: FaultPoison, Spec: "fault=poison"}
	if err := CheckFault(&f, job, testPartitions); err != nil || f.Topic != topicOrders {
		t.Fatalf("CheckFault = %v, topic %q: want the job's first input, %s", err, f.Topic, topicOrders)
	}
	for _, bad := range []Fault{
		{Kind: FaultPoison, Topic: "enriched", Spec: "fault=poison,topic=enriched"},
		{Kind: FaultPoison, Partition: int32(testJob.Partitions), Spec: "fault=poison,partition=4"},
		{Kind: FaultPanic, Task: "join/2", Spec: "task=join/2,fault=panic"},
		{Kind: FaultPanic, Task: "meteor/0", Spec: "task=meteor/0,fault=panic"},
	} {
		var se *fault.SpecError
		if err := CheckFault(&bad, job, testPartitions); !errors.As(err, &se) || se.Spec != bad.Spec {
			t.Fatalf("CheckFault(%s) = %v, want a *fault.SpecError for it", bad.Spec, err)
		}
	}
}
