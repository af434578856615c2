//go:build flinkbench

package flinkbench

import (
	"fmt"
	"net/http"
	"sync"
	"time"
)

// pollCheckpoints polls a Flink REST API every 250 ms for its job's
// completed checkpoints until the returned function is called, which
// returns, per checkpoint, its end-to-end duration and the longest
// alignment of any subtask in it (Flink's per-subtask alignment duration),
// in ms.
func pollCheckpoints(base string) func() (durations, aligns []float64) {
	stop := make(chan struct{})
	var mu sync.Mutex
	dur, align := map[int64]float64{}, map[int64]float64{}
	go func() {
		c := &http.Client{Timeout: time.Second}
		for {
			select {
			case <-stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
			jid, vertices, ok := flinkJob(c, base)
			if !ok {
				continue
			}
			var cp struct {
				History []struct {
					ID       int64   `json:"id"`
					Status   string  `json:"status"`
					Duration float64 `json:"end_to_end_duration"`
				} `json:"history"`
			}
			if getJSON(c, base+"/jobs/"+jid+"/checkpoints", &cp) != nil {
				continue
			}
			for _, h := range cp.History {
				mu.Lock()
				_, known := dur[h.ID]
				mu.Unlock()
				if h.Status != "COMPLETED" || known {
					continue
				}
				a, ok := longestAlignment(c, base, jid, h.ID, vertices)
				mu.Lock()
				dur[h.ID] = h.Duration
				if ok {
					align[h.ID] = a
				}
				mu.Unlock()
			}
		}
	}()
	return func() ([]float64, []float64) {
		close(stop)
		mu.Lock()
		defer mu.Unlock()
		var d, a []float64
		for _, v := range dur {
			d = append(d, v)
		}
		for _, v := range align {
			a = append(a, v)
		}
		return d, a
	}
}

// flinkJob is the id and vertex ids of the MiniCluster's job.
func flinkJob(c *http.Client, base string) (string, []string, bool) {
	var ov struct {
		Jobs []struct {
			JID string `json:"jid"`
		} `json:"jobs"`
	}
	if getJSON(c, base+"/jobs/overview", &ov) != nil || len(ov.Jobs) == 0 {
		return "", nil, false
	}
	var job struct {
		Vertices []struct {
			ID string `json:"id"`
		} `json:"vertices"`
	}
	if getJSON(c, base+"/jobs/"+ov.Jobs[0].JID, &job) != nil {
		return "", nil, false
	}
	var ids []string
	for _, v := range job.Vertices {
		ids = append(ids, v.ID)
	}
	return ov.Jobs[0].JID, ids, true
}

// longestAlignment is the longest alignment duration of any subtask of
// any vertex in checkpoint id.
func longestAlignment(c *http.Client, base, jid string, id int64, vertices []string) (float64, bool) {
	longest, any := 0.0, false
	for _, vid := range vertices {
		var d struct {
			Subtasks []struct {
				Alignment struct {
					Duration float64 `json:"duration"`
				} `json:"alignment"`
			} `json:"subtasks"`
		}
		if getJSON(c, fmt.Sprintf("%s/jobs/%s/checkpoints/details/%d/subtasks/%s", base, jid, id, vid), &d) != nil {
			continue
		}
		for _, st := range d.Subtasks {
			longest, any = max(longest, st.Alignment.Duration), true
		}
	}
	return longest, any
}
