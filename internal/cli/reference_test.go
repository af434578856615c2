package cli

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

var updateReference = flag.Bool("update-reference", false, "write docs/reference from the commands (make docs)")

// referenceDir is where the command reference lives, generated from the
// commands by cobra's doc generator.
const referenceDir = "../../docs/reference"

// docs/reference is what cobra's doc generator writes from the commands,
// so that the flag reference cannot drift from the flags: `make docs`
// writes it again after a change.
func TestReferenceIsTheCommands(t *testing.T) {
	root := newRootCmd()
	var noTag func(c *cobra.Command)
	noTag = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, s := range c.Commands() {
			noTag(s)
		}
	}
	noTag(root)
	dir := t.TempDir()
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		t.Fatal(err)
	}
	if *updateReference {
		if err := os.RemoveAll(referenceDir); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(referenceDir, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	have, _ := filepath.Glob(filepath.Join(referenceDir, "*.md"))
	names := func(ps []string) []string {
		var out []string
		for _, p := range ps {
			out = append(out, filepath.Base(p))
		}
		return out
	}
	if !slices.Equal(names(want), names(have)) {
		t.Fatalf("docs/reference holds %v, the commands make %v: run make docs", names(have), names(want))
	}
	for _, p := range want {
		gen, _ := os.ReadFile(p)
		cur, _ := os.ReadFile(filepath.Join(referenceDir, filepath.Base(p)))
		if !bytes.Equal(gen, cur) {
			t.Errorf("docs/reference/%s is not what the commands say: run make docs", filepath.Base(p))
		}
	}
}
