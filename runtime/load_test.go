package runtime

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
)

// A subtask slowed tenfold is the busiest in the load reports, near 1000
// ms of every second, and the subtasks upstream of it are back-pressured:
// how Flink's busy and back-pressured times find a bottleneck.
func TestLoadFindsTheSlowedSubtask(t *testing.T) {
	var slowed bool
	r := (&run{records: 40000, rate: 4000, interval: 500 * time.Millisecond, loadEvery: 400 * time.Millisecond, cancelAfterDuring: true,
		during: func(j *Job) {
			waitFor(t, "records flowing", func() bool { return recordsIn(j) > 2000 })
			if err := j.Inject(Fault{Kind: FaultSlow, Task: "join/0", Factor: 10, For: 4 * time.Second}); err != nil {
				t.Error(err)
				return
			}
			slowed = true
			elapse(3 * time.Second)
		}}).do(t)
	if !slowed {
		t.Fatal("the slow fault was not injected")
	}
	// The last report while the fault held: the subtask's backlog has
	// built up by then.
	var last view.TaskLoad
	for _, e := range r.events {
		if l, ok := e.Event.(view.TaskLoad); ok {
			last = l
		}
	}
	by := map[string]view.SubtaskLoad{}
	busiest := ""
	for _, l := range last.Tasks {
		by[l.Task] = l
		if busiest == "" || l.BusyMsPerSecond > by[busiest].BusyMsPerSecond {
			busiest = l.Task
		}
	}
	t.Logf("load: %+v", last.Tasks)
	if busiest != "join/0" || by["join/0"].BusyMsPerSecond < 900 {
		t.Errorf("busiest %s; join/0 busy %d ms/s, want join/0 the busiest near 1000", busiest, by["join/0"].BusyMsPerSecond)
	}
	for _, up := range []string{"parse-orders/0", "parse-orders/1", "parse-payments/0", "parse-payments/1"} {
		if bp := by[up].BackPressuredMsPerSecond; bp < 500 {
			t.Errorf("%s back-pressured %d ms/s upstream of the slowed join/0, want most of the second", up, bp)
		}
	}
	for name, l := range by {
		if sum := l.BusyMsPerSecond + l.IdleMsPerSecond + l.BackPressuredMsPerSecond; sum < 995 || sum > 1005 || !strings.Contains(name, "/") {
			t.Errorf("%s: busy+idle+bp = %d ms/s, want 1000", name, sum)
		}
	}
}

// A subtask that waits long for input reads idle while it waits, not
// when the wait ends: paused, the sources read nothing and every subtask
// downstream waits, and each report says so.
func TestLoadCountsALongWaitAsIdleWhileItLasts(t *testing.T) {
	r := (&run{records: 40000, rate: 4000, interval: 500 * time.Millisecond, loadEvery: 400 * time.Millisecond, cancelAfterDuring: true,
		during: func(j *Job) {
			waitFor(t, "records flowing", func() bool { return recordsIn(j) > 2000 })
			j.Pause(true)
			elapse(2500 * time.Millisecond)
		}}).do(t)
	var last view.TaskLoad
	for _, e := range r.events {
		if l, ok := e.Event.(view.TaskLoad); ok {
			last = l
		}
	}
	if len(last.Tasks) == 0 {
		t.Fatal("no load report")
	}
	for _, l := range last.Tasks {
		if l.IdleMsPerSecond < 900 {
			t.Errorf("%s paused: busy %d idle %d bp %d ms/s, want idle", l.Task, l.BusyMsPerSecond, l.IdleMsPerSecond, l.BackPressuredMsPerSecond)
		}
	}
}
