package barrier

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// replayCase is an event sequence from one of Flink's own handler tests,
// replayed through a Handler, with what it must report in order.
//
// Events, separated by spaces: b<id>@<ch> a barrier, p<id>@<ch> a priority
// barrier, c<id>@<ch> a cancellation marker, e@<ch> end of input, a<id> a
// coordinator abort, t<id> the aligned-checkpoint timeout.
//
// Log, in the order the task acts on each Result: -<id> for every
// OlderAborted, then Aborted; +<id> for Triggered, +<id>u when unaligned;
// =<id> for InFlightDone.
type replayCase struct {
	name    string // the Flink test it replays
	inputs  int
	events  string
	log     string
	pending int64 // Pending() at the end
}

func runReplays(t *testing.T, mode Mode, cases []replayCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{t: t0}
			h := New(mode, tc.inputs, clock.now)
			var log []string
			for ev := range strings.FieldsSeq(tc.events) {
				clock.t = clock.t.Add(ms)
				r, err := replayEvent(h, ev)
				if err != nil {
					t.Fatal(err)
				}
				for _, id := range r.OlderAborted {
					log = append(log, fmt.Sprintf("-%d", id))
				}
				if r.Aborted != 0 {
					log = append(log, fmt.Sprintf("-%d", r.Aborted))
				}
				if r.Triggered != 0 {
					u := ""
					if r.Unaligned {
						u = "u"
					}
					log = append(log, fmt.Sprintf("+%d%s", r.Triggered, u))
				}
				if r.InFlightDone != 0 {
					log = append(log, fmt.Sprintf("=%d", r.InFlightDone))
				}
			}
			if got := strings.Join(log, " "); got != tc.log {
				t.Errorf("log %q, want %q", got, tc.log)
			}
			if p := h.Pending(); p != tc.pending {
				t.Errorf("Pending() = %d, want %d", p, tc.pending)
			}
		})
	}
}

// replayEvent hands one event of a replayCase to h.
func replayEvent(h Handler, ev string) (Result, error) {
	idPart, chPart, hasCh := strings.Cut(ev[1:], "@")
	var id int64
	var ch int
	var err error
	if idPart != "" {
		if id, err = strconv.ParseInt(idPart, 10, 64); err != nil {
			return Result{}, fmt.Errorf("event %q: %v", ev, err)
		}
	}
	if hasCh {
		if ch, err = strconv.Atoi(chPart); err != nil {
			return Result{}, fmt.Errorf("event %q: %v", ev, err)
		}
	}
	switch ev[0] {
	case 'b':
		return h.OnBarrier(ch, id), nil
	case 'p':
		return h.OnPriorityBarrier(ch, id), nil
	case 'c':
		return h.OnCancel(ch, id), nil
	case 'e':
		return h.OnEndOfInput(ch), nil
	case 'a':
		return h.Abort(id), nil
	case 't':
		return h.TimeOut(id), nil
	}
	return Result{}, fmt.Errorf("event %q: unknown kind", ev)
}

// TestTrackerFlinkReplays replays the interleavings of Flink's
// CheckpointBarrierTrackerTest (checkpoints after tasks finished enabled).
func TestTrackerFlinkReplays(t *testing.T) {
	runReplays(t, AtLeastOnce, []replayCase{
		{name: "testSingleChannelWithBarriers", inputs: 1,
			events: "b1@0 b2@0 b3@0 b4@0 b5@0 b6@0",
			log:    "+1 +2 +3 +4 +5 +6"},
		{name: "testSingleChannelWithSkippedBarriers", inputs: 1,
			events: "b1@0 b3@0 b4@0 b6@0 b7@0 b10@0",
			log:    "+1 +3 +4 +6 +7 +10"},
		{name: "testMultiChannelWithBarriers", inputs: 3,
			events: "b1@1 b1@2 b1@0 b2@0 b2@1 b2@2 b3@2 b3@0 b3@1 b4@1 b4@2 b4@0",
			log:    "+1 +2 +3 +4"},
		{name: "testMultiChannelSkippingCheckpoints", inputs: 3,
			events: "b1@1 b1@2 b1@0 b2@0 b2@1 b2@2 b3@2 b4@0 b4@1 b4@2",
			log:    "+1 +2 +4"},
		{name: "testCompleteCheckpointsOnLateBarriers", inputs: 3,
			events: "b2@1 b2@0 b2@2 b3@1 b3@2 b4@2 b4@1 b3@0 b4@0 b5@1 b5@0 b5@2 " +
				"b6@1 b6@0 b7@1 b7@2 b8@2 b8@1 b9@1 b7@0 b9@2 b10@2 b8@0 b9@0 b10@0 b10@1",
			log: "+2 +3 +4 +5 +7 +8 +9 +10"},
		{name: "testNextFirstCheckpointBarrierOvertakesCancellationBarrier", inputs: 2,
			events: "b1@1 b2@1 c1@0 b2@0",
			log:    "-1 +2"},
		{name: "testSingleChannelAbortCheckpoint", inputs: 1,
			events: "b1@0 b2@0 c4@0 b5@0 c6@0",
			log:    "+1 +2 -4 +5 -6"},
		{name: "testMultiChannelAbortCheckpoint", inputs: 3,
			events: "b1@1 b1@2 b1@0 b2@0 b2@2 c2@1 b3@1 b3@2 b3@0 " +
				"c4@1 b4@2 b4@0 b5@2 b5@1 b5@0 c6@1 c6@2 b6@0",
			log: "+1 -2 +3 -4 +5 -6"},
		{name: "testInterleavedCancellationBarriers", inputs: 3,
			events: "b1@0 c2@0 c1@1 c2@1 c1@2 c2@2",
			log:    "-1 -2"},
		{name: "testTriggerCheckpointsWithEndOfPartition", inputs: 3,
			events: "b1@0 b2@0 b2@1 b3@0 b4@0 b4@1 b5@1 e@2",
			log:    "+4", pending: 5},
		{name: "testDeduplicateChannelsWithBothBarrierAndEndOfPartition", inputs: 3,
			events: "b2@0 b2@1 e@1 b2@2",
			log:    "+2"},
		{name: "testTriggerCheckpointsAfterReceivedEndOfPartition", inputs: 3,
			events: "e@2 b5@0 b6@0 b6@1 e@1 b7@0",
			log:    "+6 +7"},
		{name: "testNoFastPathWithChannelFinishedDuringCheckpoints", inputs: 2,
			events: "b1@0 e@0 b1@1",
			log:    "+1"},
		{name: "testCompleteAndRemoveAbortedCheckpointWithEndOfPartition", inputs: 3,
			events: "c4@0 b4@1 b5@1 e@2",
			log:    "-4", pending: 5},
		{name: "testAbortCheckpointsAfterEndOfPartitionReceived", inputs: 3,
			events: "e@2 b5@0 b6@0 c6@1 e@1 c7@0",
			log:    "-5 -6 -7"},
		{name: "testNoFastPathWithChannelFinishedDuringCheckpointsCancel", inputs: 2,
			events: "b1@0 e@0 c1@1",
			log:    "-1"},
		{name: "testTwoLastBarriersOneByOne", inputs: 2,
			events: "b1@1 b2@1 b1@0 b2@0",
			log:    "+1 +2"},
	})
}

// TestAlignerFlinkReplays replays interleavings of Flink's
// AlignedCheckpointsTest with in-band barriers, and of its
// UnalignedCheckpointsTest and AlternatingCheckpointsTest with priority
// barriers: a barrier of an unaligned checkpoint reaches the handler as a
// priority event.
func TestAlignerFlinkReplays(t *testing.T) {
	runReplays(t, ExactlyOnce, []replayCase{
		{name: "AlignedCheckpointsTest/testMultiChannelAbortCheckpoint", inputs: 3,
			events: "b1@1 b1@2 b1@0 b2@0 b2@2 c2@1 b3@1 b3@2 b3@0 " +
				"c4@1 b4@2 b4@0 b5@2 b5@1 b5@0 c6@1 c6@2 b6@0",
			log: "+1 -2 +3 -4 +5 -6"},
		{name: "UnalignedCheckpointsTest/testMultiChannelWithBarriers", inputs: 3,
			events: "p1@1 p1@2 p1@0 p2@0 p2@1 p2@2 p3@2 p3@0 p3@1 p4@1 p4@2 p4@0 " +
				"p5@1 p5@2 p5@0 e@0 e@1 e@2",
			log: "+1u =1 +2u =2 +3u =3 +4u =4 +5u =5"},
		{name: "UnalignedCheckpointsTest/testMissingCancellationBarriers", inputs: 2,
			events: "p1@0 c2@0 c3@0 c3@1 e@0 e@1",
			log:    "+1u -1 -2 -3"},
		{name: "UnalignedCheckpointsTest/testEarlyCleanup", inputs: 3,
			events: "p1@1 p1@2 p1@0 p2@1 e@1 p2@2 e@2 e@0",
			log:    "+1u =1 +2u =2"},
		{name: "UnalignedCheckpointsTest/testStartAlignmentWithClosedChannels", inputs: 4,
			events: "e@2 e@1 p2@3 p2@0 p3@3 p3@0 p4@0 p4@3 e@0 p5@3 e@3",
			log:    "+2u =2 +3u =3 +4u =4 +5u =5"},
		{name: "UnalignedCheckpointsTest/testEndOfStreamWhileCheckpoint", inputs: 3,
			events: "p1@0 p1@1 p1@2 p2@2 p2@0 e@2 e@1 e@0",
			log:    "+1u =1 +2u =2"},
		{name: "UnalignedCheckpointsTest/testSingleChannelAbortCheckpoint", inputs: 1,
			events: "p1@0 p2@0 c4@0 p5@0 c6@0 e@0",
			log:    "+1u =1 +2u =2 -4 +5u =5 -6"},
		{name: "UnalignedCheckpointsTest/testMultiChannelAbortCheckpoint", inputs: 3,
			events: "p1@1 p1@2 p1@0 p2@0 p2@2 c2@1 p3@1 p3@2 p3@0 " +
				"c4@1 p4@2 p4@0 p5@2 p5@1 p5@0 c6@1 c6@2 p6@0 e@0 e@1 e@2",
			log: "+1u =1 +2u -2 +3u =3 -4 +5u =5 -6"},
		{name: "UnalignedCheckpointsTest/testProcessCancellationBarrierAfterProcessBarrier", inputs: 2,
			events: "p1@0 c1@0 c2@0",
			log:    "+1u -1 -2"},
		{name: "UnalignedCheckpointsTest/testProcessCancellationBarrierAfterProcessBarrier/newer", inputs: 2,
			events: "p1@0 c2@0 c3@0",
			log:    "+1u -1 -2 -3"},
		{name: "UnalignedCheckpointsTest/testProcessCancellationBarrierBeforeProcessAndReceiveBarrier", inputs: 1,
			events: "c1@0 p1@0",
			log:    "-1"},
		{name: "AlternatingCheckpointsTest/testSwitchToUnalignedByUpstream", inputs: 2,
			events: "p1@1",
			log:    "+1u", pending: 1},
		{name: "AlternatingCheckpointsTest/testAlignedAfterTimedOut", inputs: 1,
			events: "p1@0 b2@0",
			log:    "+1u =1 +2"},
		{name: "AlternatingCheckpointsTest/testTimeoutAlignmentAfterProcessingBarrier", inputs: 3,
			events: "b1@2 t1 p1@0 p1@1",
			log:    "+1u =1"},
		{name: "AlternatingCheckpointsTest/testAlignedNeverTimeoutableCheckpoint", inputs: 2,
			events: "b1@0 b1@1",
			log:    "+1"},
	})
}
