package cli

import (
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"
	tourpanel "github.com/faultline-dev/faultline/tui/components/tour"
)

// Every narration of every tour shows whole in the tour's panel at 80×24
// (its smallest, tour.MinHeight rows) beside the status line: a trainer
// on a small projector never reads a step cut short.
func TestEveryNarrationFitsAt80x24(t *testing.T) {
	tours, err := allTours()
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range tours {
		for i, s := range tr.Steps {
			if s.Say == "" {
				continue
			}
			ctx := common.NewContext(nil)
			ctx.Snap = view.Snapshot{Tour: &view.Tour{Title: tr.Title, Step: i + 1, Steps: len(tr.Steps), Text: s.Say, Link: s.Link,
				Key: "x then 1 then y", Check: &view.TourCheck{Claim: "nothing lost", Held: true}}}
			ctx.HasSnap = true
			p := tourpanel.New(ctx)
			p.SetSize(80, tourpanel.MinHeight)
			v := p.View()
			words := strings.Fields(strings.ReplaceAll(s.Say, "**", ""))
			if strings.Count(v, "…") > strings.Count(s.Say, "…") || !strings.Contains(v, words[len(words)-1]) {
				t.Errorf("tour %s, step %d: the narration is cut at 80×24:\n%s", tr.Name, i+1, v)
			}
		}
	}
}
