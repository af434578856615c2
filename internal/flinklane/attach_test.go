//go:build flink

package flinklane

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/attach"
	"github.com/faultline-dev/faultline/internal/e2e"
	"github.com/faultline-dev/faultline/tui/common"
)

func TestMain(m *testing.M) { e2e.MainPlain(m) }

// restCheckpoints polls the peer's REST API every 200 ms for its
// checkpoints until t ends: when each was first reported completed, and
// the savepoints among them.
type restCheckpoints struct {
	mu         sync.Mutex
	completed  map[int64]time.Time
	savepoints map[int64]bool
}

func watchCheckpoints(t *testing.T, p *Peer) *restCheckpoints {
	w := &restCheckpoints{completed: map[int64]time.Time{}, savepoints: map[int64]bool{}}
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		for {
			var cps struct {
				History []struct {
					ID          int64  `json:"id"`
					Status      string `json:"status"`
					IsSavepoint bool   `json:"is_savepoint"`
				} `json:"history"`
			}
			if p.Get("/jobs/"+p.JobID+"/checkpoints", &cps) == nil {
				w.mu.Lock()
				for _, h := range cps.History {
					if _, ok := w.completed[h.ID]; !ok && h.Status == "COMPLETED" {
						w.completed[h.ID] = time.Now()
						w.savepoints[h.ID] = h.IsSavepoint
					}
				}
				w.mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *restCheckpoints) reported(id int64) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.completed[id]
	return at, ok
}

// count is how many checkpoints (savepoints: true) were reported completed.
func (w *restCheckpoints) count(savepoints bool) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for id := range w.completed {
		if w.savepoints[id] == savepoints {
			n++
		}
	}
	return n
}

// startAttach runs faultline attach on the peer in tmux, with the peer's
// Kafka for its control topic, and flags.
func startAttach(t *testing.T, p *Peer, addr string, flags ...string) *e2e.Session {
	return e2e.StartTmux(t, 160, 50, fmt.Sprintf("%s attach %s --brokers %s %s; echo attach exited $?; sleep 600",
		e2e.Binary(t), p.REST, addr, strings.Join(flags, " ")))
}

// peerRows are the rows of the peer job's operators as the screen draws
// them: each vertex by its chained operators, each subtask RUNNING.
var peerRows = []*regexp.Regexp{
	regexp.MustCompile(`(?m)^orders-source→parse-orders +0 RUN .* 1 RUN `),
	regexp.MustCompile(`(?m)^payments-source→parse-payments +0 RUN .* 1 RUN `),
	regexp.MustCompile(`(?m)^join ⋈ hash +▸?0 RUN .* 1 RUN `),
	regexp.MustCompile(`(?m)^revenue ← hash +0 RUN .* 1 RUN `),
	regexp.MustCompile(`(?m)^sink ← rebalance +0 RUN [^\n]*$`),
}

// allRows says whether the screen shows every row of peerRows.
func allRows(screen string) bool {
	for _, row := range peerRows {
		if !row.MatchString(screen) {
			return false
		}
	}
	return true
}

var completedOnScreen = regexp.MustCompile(`checkpoint (\d+) completed in`)

// The screen of `faultline attach` on the peer job in its MiniCluster: its
// operators with their parallelism and each subtask's state, each
// checkpoint Flink's REST API reports completed on the screen within 5 s,
// and a checkpoint's per-subtask alignment durations as Flink measured
// them.
func TestAttachShowsTheFlinkJobAsItsAPIReportsIt(t *testing.T) {
	lib := Lib(t)
	addr := Broker(t, 400_000)
	p := StartPeer(t, lib, addr, "bounded=false", "interval=2s", "output=revenue-attach", "prefix=attach")
	api := watchCheckpoints(t, p)
	s := startAttach(t, p, addr)
	s.WaitFor("the peer job's operators, every subtask RUNNING", 90*time.Second, allRows)
	shown := map[int64]time.Time{}
	s.WaitFor("six checkpoints on the screen", 2*time.Minute, func(sc string) bool {
		for _, m := range completedOnScreen.FindAllStringSubmatch(sc, -1) {
			var id int64
			fmt.Sscan(m[1], &id)
			if _, ok := shown[id]; !ok {
				shown[id] = time.Now()
			}
		}
		return len(shown) >= 6
	})
	for id, at := range shown {
		// The watcher polls every 200 ms: it may see a checkpoint a moment
		// after the screen did.
		var rep time.Time
		ok := false
		for wait := time.Now().Add(2 * time.Second); !ok && time.Now().Before(wait); time.Sleep(50 * time.Millisecond) {
			rep, ok = api.reported(id)
		}
		switch {
		case !ok:
			t.Errorf("the screen says checkpoint %d completed; Flink's REST API never did", id)
		case at.Sub(rep) > 5*time.Second:
			t.Errorf("checkpoint %d is on the screen %s after Flink's REST API reported it", id, at.Sub(rep).Round(time.Millisecond))
		}
	}
	checkAlignments(t, s, p)
}

// checkAlignments opens the newest checkpoint's detail and holds each
// subtask's alignment there to Flink's figure for it.
func checkAlignments(t *testing.T, s *e2e.Session, p *Peer) {
	t.Helper()
	s.Keys("Tab", "Enter")
	title := regexp.MustCompile(`━━ checkpoint (\d+) ━`)
	sc := s.WaitFor("the newest checkpoint's detail with every subtask acknowledged", 10*time.Second, func(sc string) bool {
		return title.MatchString(sc) && strings.Count(sc, "✓ acked") == 9
	})
	var id int64
	fmt.Sscan(title.FindStringSubmatch(sc)[1], &id)
	want := flinkAlignments(t, p, id)
	got := detailColumn(t, sc, "align")
	t.Logf("checkpoint %d's alignments on the screen: %v", id, got)
	if len(got) != len(want) {
		t.Fatalf("checkpoint %d: %d subtasks' alignments on the screen, Flink reports %d:\n%s", id, len(got), len(want), sc)
	}
	for task, w := range want {
		if got[task] != w {
			t.Errorf("checkpoint %d, %s: alignment %q on the screen, Flink's %q", id, task, got[task], w)
		}
	}
}

// flinkAlignments are checkpoint id's subtasks' alignment durations as
// Flink's REST API gives them, by the screen's subtask names, as the
// screen writes a duration.
func flinkAlignments(t *testing.T, p *Peer, id int64) map[string]string {
	t.Helper()
	var job struct {
		Vertices []struct{ ID, Name string } `json:"vertices"`
	}
	if err := p.Get("/jobs/"+p.JobID, &job); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, v := range job.Vertices {
		var d struct {
			Subtasks []struct {
				Index     int `json:"index"`
				Alignment struct {
					Duration int64 `json:"duration"`
				} `json:"alignment"`
			} `json:"subtasks"`
		}
		if err := p.Get(fmt.Sprintf("/jobs/%s/checkpoints/details/%d/subtasks/%s", p.JobID, id, v.ID), &d); err != nil {
			t.Fatal(err)
		}
		for _, st := range d.Subtasks {
			name := fmt.Sprintf("%s/%d", attach.OperatorName(v.Name), st.Index)
			out[name] = common.HumanDuration(time.Duration(st.Alignment.Duration) * time.Millisecond)
		}
	}
	return out
}

// detailColumn reads one column of the checkpoint detail's table, by
// subtask: the word of each row that ends where the column's title does
// (the columns are right-aligned; every glyph on the screen is one cell).
func detailColumn(t *testing.T, screen, title string) map[string]string {
	t.Helper()
	lines := strings.Split(screen, "\n")
	end := -1
	out := map[string]string{}
	for _, l := range lines {
		r := []rune(l)
		if end < 0 {
			if strings.HasPrefix(strings.TrimSpace(l), "subtask ") {
				i := strings.Index(l, " "+title)
				if i < 0 {
					t.Fatalf("the detail has no %s column:\n%s", title, screen)
				}
				end = len([]rune(l[:i])) + 1 + len(title)
			}
			continue
		}
		if !strings.Contains(l, "✓ acked") || len(r) < end {
			continue
		}
		start := end
		for start > 0 && r[start-1] != ' ' {
			start--
		}
		name := strings.Fields(strings.TrimLeft(l, " ▸"))[0]
		out[name] = string(r[start:end])
	}
	return out
}
