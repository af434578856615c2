package cli

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"
)

// --version and faultline version name the version, the commit, Go and
// the main parts, from the build info; a release build's link-time values
// win.
func TestVersionSaysTheBuild(t *testing.T) {
	var f buildFacts
	f.Deps = map[string]string{}
	f.fromBuildInfo(&debug.BuildInfo{
		Main: debug.Module{Path: "github.com/faultline-dev/faultline", Version: "v0.9.0"},
		Deps: []*debug.Module{{Path: "github.com/IBM/sarama", Version: "v1.61.1"},
			{Path: "github.com/dgraph-io/badger/v4", Version: "v4.9.6"},
			{Path: "github.com/charmbracelet/bubbletea", Version: "v1.3.9", Replace: &debug.Module{Path: "github.com/charmbracelet/bubbletea", Version: "v1.3.10"}}},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-12-05T01:00:00Z"}, {Key: "vcs.modified", Value: "true"}},
	})
	f.Go, f.Platform = "go1.26.8", "linux/amd64"
	var b bytes.Buffer
	f.print(&b)
	for _, want := range []string{"faultline v0.9.0\n", "  commit     abc123 (2026-12-05T01:00:00Z), with changes not committed\n",
		"  go         go1.26.8 linux/amd64\n", "  sarama     v1.61.1\n", "  badger     v4.9.6\n", "  bubbletea  v1.3.10\n", "  broker     kfake v0.0.0-"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("version does not say %q:\n%s", want, b.String())
		}
	}
	version, commit = "v1.0.0", "def456"
	defer func() { version, commit = "", "" }()
	if f := readBuildFacts(); f.Version != "v1.0.0" || f.Commit != "def456" {
		t.Errorf("link-time version and commit not used: %+v", f)
	}
	var out bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetArgs([]string{"--version"})
	if err := root.Execute(); err != nil || !strings.HasPrefix(out.String(), "faultline ") || !strings.Contains(out.String(), "  sarama ") {
		t.Errorf("--version: %v\n%s", err, out.String())
	}
}
