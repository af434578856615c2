package overview

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"
)

func TestSpreadIsMinAvgMaxAndTheNearestRankP99(t *testing.T) {
	xs := make([]float64, 0, 200)
	for i := 200; i >= 1; i-- {
		xs = append(xs, float64(i))
	}
	got := spreadOf(xs)
	want := Spread{N: 200, Min: 1, Avg: 100.5, Max: 200, P99: 198}
	if got != want {
		t.Fatalf("spreadOf(1..200) = %+v, want %+v", got, want)
	}
	if got := spreadOf([]float64{7}); got != (Spread{N: 1, Min: 7, Avg: 7, Max: 7, P99: 7}) {
		t.Fatalf("one figure: %+v", got)
	}
	if got := spreadOf(nil); got.N != 0 {
		t.Fatalf("no figure: %+v", got)
	}
}

// The summary covers completed checkpoints only, with the job clock's
// durations, and the acknowledgements of subtasks that took a snapshot.
func TestSummaryCoversCompletedCheckpoints(t *testing.T) {
	ms := time.Millisecond
	snap := &view.Snapshot{Checkpoints: view.Checkpoints{History: []view.Checkpoint{
		{ID: 3, Status: view.StatusPending, Duration: 9 * ms},
		{ID: 2, Status: view.StatusCompleted, Duration: 40 * ms, FullBytes: 100, AckedTasks: map[string]view.SubtaskAck{
			"a/0": {SyncDuration: 2 * ms, Alignment: 10 * ms}, "a/1": {Finished: true, SyncDuration: time.Hour}}},
		{ID: 1, Status: view.StatusFailed, Duration: time.Hour},
		{ID: 0, Status: view.StatusCompleted, Duration: 20 * ms, FullBytes: 300, AckedTasks: map[string]view.SubtaskAck{
			"a/0": {SyncDuration: 4 * ms, Alignment: 30 * ms}}},
	}}}
	s := Summarize(snap)
	if s.Checkpoints != 2 || s.Acks != 2 {
		t.Fatalf("covers %d checkpoints, %d acks; want 2 and 2", s.Checkpoints, s.Acks)
	}
	if e := s.PerCheckpoint[0].Spread; e.Min != float64(20*ms) || e.Max != float64(40*ms) || e.Avg != float64(30*ms) {
		t.Errorf("end to end %+v", e)
	}
	if f := s.PerCheckpoint[2].Spread; f.Avg != 200 {
		t.Errorf("full size %+v", f)
	}
	if a := s.PerSubtask[2].Spread; a.Max != float64(30*ms) || a.Min != float64(10*ms) {
		t.Errorf("alignment %+v", a)
	}
}

// An attached job's own summary (Flink's, over every completed
// checkpoint) is shown as the job reports it, above the history's.
func TestTheJobsOwnSummaryIsShownAsReported(t *testing.T) {
	ctx := common.NewContext(nil)
	ctx.Snap = view.Snapshot{Checkpoints: view.Checkpoints{Completed: 40, History: []view.Checkpoint{
		{ID: 40, Status: view.StatusCompleted, Duration: 20 * time.Millisecond}},
		Reported: &view.ReportedSummary{EndToEnd: view.DurationStats{Min: 77 * time.Millisecond, Avg: 290 * time.Millisecond,
			Max: 877 * time.Millisecond, P99: 877 * time.Millisecond}, StateSize: view.SizeStats{Max: 5 << 20}}}}
	o := New(ctx)
	o.SetSize(100, 40)
	out := o.View()
	for _, want := range []string{"of all 40 completed checkpoints, as the job reports it", "77ms", "290ms", "877ms", "of the 1 completed checkpoint in the history"} {
		if !strings.Contains(out, want) {
			t.Errorf("the overview does not say %q:\n%s", want, out)
		}
	}
}
