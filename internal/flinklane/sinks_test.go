//go:build flink

package flinklane

import (
	"testing"
	"time"
)

// The peer job's at-least-once sink through a failure commits some paid
// orders twice, and faultline verify says so: duplicates under
// exactly-once (exit 4), a pass under at-least-once, nothing lost either
// way.
func TestVerifyFindsTheDuplicatesOfAnAtLeastOnceFlinkSink(t *testing.T) {
	lib := Lib(t)
	addr := Broker(t, 200_000)
	p := StartPeer(t, lib, addr, "bounded=true", "interval=1s", "delivery=at-least-once", "fault=panic:join/0:40000",
		"output=revenue-alo", "prefix=alo")
	if err := p.Wait(5 * time.Minute); err != nil {
		t.Fatalf("the at-least-once peer: %v", err)
	}
	v, code := verifyOutput(t, addr, "revenue-alo")
	if code != 4 || v.Duplicates == 0 || v.Lost != 0 {
		t.Fatalf("faultline verify of an at-least-once sink through a panic: exit %d, %+v (want duplicates, nothing lost, exit 4)", code, v)
	}
	t.Logf("at-least-once through a panic: %d duplicates of %d expected", v.Duplicates, v.Expected)
	if v, code := verifyOutput(t, addr, "revenue-alo", "--guarantee", "at-least-once"); code != 0 || !v.OK {
		t.Fatalf("under --guarantee at-least-once: exit %d, %+v", code, v)
	}
}

// The peer job's exactly-once sink through a SIGKILL of the MiniCluster's
// JVM, then a new job restored from the latest retained checkpoint: the
// committed output holds every paid order once, and never a duplicate on
// the way. The peer runs unbounded: a bounded one restored stalls under
// the watermark alignment (a reader whose splits all ended waits for the
// enumerator's "no more splits" that a restored enumerator does not send,
// and holds the group's watermark while the other readers are paused).
func TestAFlinkJobKilledAndRestoredLosesNothingAndDuplicatesNothing(t *testing.T) {
	lib := Lib(t)
	addr := Broker(t, 300_000)
	opts := []string{"bounded=false", "interval=500ms", "output=revenue-kill", "prefix=kill"}
	p := StartPeer(t, lib, addr, opts...)
	waitFor(t, time.Minute, "two completed checkpoints", func() (bool, error) {
		n, err := p.CompletedCheckpoints()
		return n >= 2, err
	})
	p.Kill()
	chk, err := p.LatestCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killed; restoring from %s", chk)
	again := StartPeer(t, lib, addr, append(opts, "checkpoint-dir="+p.CheckpointDir, "restore="+chk)...)
	var cps struct {
		Counts struct{ Restored int } `json:"counts"`
	}
	if err := again.Get("/jobs/"+again.JobID+"/checkpoints", &cps); err != nil || cps.Counts.Restored != 1 {
		t.Fatalf("the new job says it restored %d checkpoints (%v), want 1", cps.Counts.Restored, err)
	}
	var v verdict
	waitFor(t, 5*time.Minute, "every paid order in the restored job's committed output", func() (bool, error) {
		var code int
		v, code = verifyOutput(t, addr, "revenue-kill")
		if v.Duplicates != 0 {
			t.Fatalf("faultline verify of the restored job's output: %d duplicates (exit %d, %+v)", v.Duplicates, code, v)
		}
		return code == 0, nil
	})
	if v.Lost != 0 || v.Expected == 0 || v.Committed != v.Expected {
		t.Fatalf("faultline verify after a kill and a restore: %+v", v)
	}
	if err := again.Cancel(); err != nil {
		t.Fatal(err)
	}
}
