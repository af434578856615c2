//go:build flink

package flinklane

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// panicMessage is what a subtask throws for a panic from the control topic
// (bench/flink's Control.PANIC_MESSAGE).
const panicMessage = "injected panic from the control topic"

// TestPeerJobTakesAPanicFromTheControlTopic writes a panic for join/0 to
// the control topic of a running peer job and checks, through Flink's REST
// API, that the subtask threw it and that the job restarted and runs again.
func TestPeerJobTakesAPanicFromTheControlTopic(t *testing.T) {
	lib := Lib(t)
	addr := Broker(t, 200_000)
	p := StartPeer(t, lib, addr, "bounded=false", "interval=1s", "output=revenue-control")
	waitFor(t, time.Minute, "a completed checkpoint", func() (bool, error) {
		n, err := p.CompletedCheckpoints()
		return n >= 1, err
	})

	Produce(t, addr, "faultline-control", `{"fault":"panic","task":"join/0"}`)
	fired := waitFired(t, p, addr)
	if fired.Fault != "panic" || fired.Task != "join/0" || fired.AtMs == 0 {
		t.Fatalf("the control_fault line: %+v", fired)
	}

	waitFor(t, 30*time.Second, "the panic in the job's exception history", func() (bool, error) {
		ex, err := p.Exceptions()
		for _, e := range ex {
			if strings.Contains(e.Stacktrace, panicMessage) || strings.Contains(e.Name, panicMessage) {
				return true, nil
			}
		}
		return false, err
	})
	waitFor(t, time.Minute, "the job RUNNING again after a restart", func() (bool, error) {
		j, err := p.Job()
		if err != nil || j.State != "RUNNING" || j.Timestamps["RESTARTING"] == 0 || j.Timestamps["RUNNING"] < j.Timestamps["RESTARTING"] {
			return false, err
		}
		for _, v := range j.Vertices {
			if v.Status != "RUNNING" {
				return false, nil
			}
		}
		return true, nil
	})

	if err := p.Cancel(); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(time.Minute); err != nil {
		t.Fatalf("PeerJob after the cancel: %v", err)
	}
	lines := p.Lines()
	if !strings.Contains(lines[len(lines)-1], `"status":"CANCELED"`) {
		t.Fatalf("PeerJob's last line after the cancel: %q", lines[len(lines)-1])
	}
	// The subtask took the fault: the restarted join/0 did not fire it again.
	if n := strings.Count(strings.Join(lines, "\n"), `"control_fault"`); n != 1 {
		t.Fatalf("%d control_fault lines, want 1: %q", n, lines)
	}
}

// controlFault is the line a subtask prints when it takes a fault from the
// control topic.
type controlFault struct {
	Fault string `json:"control_fault"`
	Task  string `json:"task"`
	AtMs  int64  `json:"at_ms"`
}

// waitFired waits for the peer's control_fault line. A fault fires at the
// subtask's next record, and the job may have read all its input by now:
// until the line comes, a few more orders and their payments are written
// every 250 ms, so that join/0 has records to take it with.
func waitFired(t *testing.T, p *Peer, addr string) controlFault {
	t.Helper()
	for i, deadline := 0, time.Now().Add(time.Minute); time.Now().Before(deadline); i++ {
		for _, l := range p.Lines() {
			var f controlFault
			if json.Unmarshal([]byte(l), &f) == nil && f.Fault != "" {
				t.Logf("the fault fired after %d batches of more input: %s", i, l)
				return f
			}
		}
		var orders, payments []string
		for k := range 20 {
			id := fmt.Sprintf("o-more-%04d-%02d", i, k)
			orders = append(orders, fmt.Sprintf(`{"order_id":%q,"customer":"c-%d","amount_cents":100}`, id, k))
			payments = append(payments, fmt.Sprintf(`{"order_id":%q,"payment_id":"p%s","amount_cents":100}`, id, id[1:]))
		}
		Produce(t, addr, "orders", orders...)
		Produce(t, addr, "payments", payments...)
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("no control_fault line in a minute; PeerJob printed %q", p.Lines())
	return controlFault{}
}
