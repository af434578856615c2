package status

import (
	"testing"

	"faultline/tui/common"
	"faultline/tui/internal/fixture"
)

func TestFlashExpiresWithTheJobsClock(t *testing.T) {
	ctx := common.NewContext(nil)
	ctx.Snap, ctx.HasSnap = fixture.Running(), true
	s := New(ctx)
	s.Update(common.FlashMsg{Text: "checkpoint 15 triggered", Level: common.LevelSuccess})
	if got := s.Flash(); got != "checkpoint 15 triggered" {
		t.Fatalf("flash %q", got)
	}
	ctx.Snap.Now = ctx.Snap.Now.Add(flashFor)
	s.Update(common.SnapshotMsg{Snapshot: ctx.Snap})
	if got := s.Flash(); got != "checkpoint 15 triggered" {
		t.Fatalf("flash %q gone before its time", got)
	}
	ctx.Snap.Now = ctx.Snap.Now.Add(1)
	s.Update(common.SnapshotMsg{Snapshot: ctx.Snap})
	if got := s.Flash(); got != "" {
		t.Fatalf("flash %q still shown", got)
	}
}
