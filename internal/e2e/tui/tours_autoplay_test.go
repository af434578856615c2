//go:build tours

package tui

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/fixtures/tours"
	"github.com/faultline-dev/faultline/internal/e2e"
	"github.com/faultline-dev/faultline/internal/tour"
	"github.com/faultline-dev/faultline/runtime/view"
)

// The tours lane (`make test-tours`): every built-in tour in autoplay in
// tmux, at 80×24 and at 120×40, from its first narration to its end on one
// screen. Each narration said while the tour points at something (a
// `highlight`) must show that thing with its marker in a capture taken
// while it is read, and the tour must end with every check held and exit 0.
func TestEveryTourInAutoplayShowsWhatItPointsAt(t *testing.T) {
	e2e.NeedProgram(t)
	names, err := fs.Glob(tours.FS, "*.yaml")
	if err != nil || len(names) == 0 {
		t.Fatalf("the built-in tours: %v %v", names, err)
	}
	for _, file := range names {
		data, err := tours.FS.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := tour.Parse(file, data)
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range [][2]int{{80, 24}, {120, 40}} {
			t.Run(fmt.Sprintf("%s/%dx%d", tr.Name, size[0], size[1]), func(t *testing.T) {
				t.Parallel()
				autoplay(t, tr, size[0], size[1])
			})
		}
	}
}

// lookAt is a narration said while the tour points at h: its step (from 1)
// and the pattern of h's marker on screen.
type lookAt struct {
	step   int
	what   string
	marker *regexp.Regexp
}

// lookAts are t's narrations said while it points at something.
func lookAts(t *tour.Tour) []lookAt {
	var out []lookAt
	var h view.Highlight
	latest := false
	for i, s := range t.Steps {
		switch {
		case s.Run != nil:
			h, latest = view.Highlight{}, false // a new run: nothing is pointed at
		case s.Highlight != nil:
			h, latest = *s.Highlight, s.CheckpointLatest
		case s.Say != "" && (h.Any() || latest):
			what, pattern := markerOf(h, latest)
			out = append(out, lookAt{step: i + 1, what: what, marker: regexp.MustCompile(pattern)})
		}
	}
	return out
}

// markerOf is what h points at (latest: the newest checkpoint) and the
// pattern of its marker on screen.
func markerOf(h view.Highlight, latest bool) (string, string) {
	switch {
	case h.Checkpoint != 0 || latest:
		return "a checkpoint's row", `» *\d+ +(pending|completed|failed|DAMAGED|restored|savepoint)\b`
	case h.Task != "" && h.Inputs:
		return h.Task + "'s input strips", `»[◂▌/]`
	case h.Task != "":
		_, idx, _ := strings.Cut(h.Task, "/")
		return h.Task, `»` + regexp.QuoteMeta(idx) + ` +[A-Z]`
	case h.Verify:
		return "the verify line", `»verify`
	case h.Restart:
		return "the restarts pane", `»restarts`
	}
	return "the header", `\A[^\n]*»`
}

var stepOf = regexp.MustCompile(`· step (\d+)/\d+`)

// autoplay runs tr in autoplay in tmux at width×height and checks it.
func autoplay(t *testing.T, tr *tour.Tour, width, height int) {
	dir := t.TempDir()
	cmd := fmt.Sprintf("%s%s tour %s --autoplay --state-dir %s 2>%s; echo faultline exited $?; sleep 600",
		e2e.ShellEnv(t), e2e.Binary(t), tr.Name, filepath.Join(dir, "state"), filepath.Join(dir, "stderr"))
	s := e2e.StartTmux(t, width, height, cmd)
	panel := "tour · " + tr.Title
	s.WaitFor("the tour's panel", 90*time.Second, func(sc string) bool { return strings.Contains(sc, panel) || strings.Contains(sc, "faultline exited") })
	want := map[int]lookAt{}
	for _, l := range lookAts(tr) {
		want[l.step] = l
	}
	shown := map[int]bool{}  // look-at steps seen with their marker
	during := map[int]bool{} // look-at steps seen at all
	var left, end string
	complete := false // the screen closes a while after this
	deadline := time.Now().Add(6 * time.Minute)
	for time.Now().Before(deadline) {
		sc := s.Screen()
		if strings.Contains(sc, "faultline exited") {
			end = sc
			break
		}
		complete = complete || strings.Contains(sc, "tour complete")
		if !strings.Contains(sc, panel) && left == "" && !complete {
			left = sc
		}
		if m := stepOf.FindStringSubmatch(sc); m != nil {
			k, _ := strconv.Atoi(m[1])
			if l, ok := want[k]; ok {
				during[k] = true
				if l.marker.MatchString(sc) {
					shown[k] = true
				}
			}
		}
		time.Sleep(150 * time.Millisecond)
	}
	if end == "" {
		t.Fatalf("the tour did not end within 6 minutes; the screen:\n%s", s.Screen())
	}
	if left != "" {
		t.Errorf("the tour left its screen before its end:\n%s", left)
	}
	for k, l := range want {
		switch {
		case !during[k]:
			t.Errorf("step %d (pointing at %s) was never on screen", k, l.what)
		case !shown[k]:
			t.Errorf("step %d points at %s, which no capture while it was read showed", k, l.what)
		}
	}
	if !strings.Contains(end, "faultline exited 0") {
		t.Errorf("the tour did not exit 0:\n%s", end)
	}
	t.Logf("%s at %dx%d: %d narrations pointing at something, each shown", tr.Name, width, height, len(want))
}
