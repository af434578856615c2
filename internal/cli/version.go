package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/runtime/kafka/broker"
)

// Set at link time by a release build (goreleaser: -ldflags "-X
// …/internal/cli.version=v1.2.3 -X …/internal/cli.commit=…"); otherwise the
// build info says them.
var version, commit string

// buildFacts are what faultline --version prints.
type buildFacts struct {
	Version, Commit, CommitTime string
	Modified                    bool
	Go, Platform                string
	Deps                        map[string]string // module path → version
}

// readBuildFacts reads them from the binary's build info and link-time
// values.
func readBuildFacts() buildFacts {
	f := buildFacts{Version: "(devel)", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, Deps: map[string]string{}}
	if bi, ok := debug.ReadBuildInfo(); ok {
		f.fromBuildInfo(bi)
	}
	if version != "" {
		f.Version = version
	}
	if commit != "" {
		f.Commit = commit
	}
	return f
}

func (f *buildFacts) fromBuildInfo(bi *debug.BuildInfo) {
	if v := bi.Main.Version; v != "" {
		f.Version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			f.Commit = s.Value
		case "vcs.time":
			f.CommitTime = s.Value
		case "vcs.modified":
			f.Modified = s.Value == "true"
		}
	}
	for _, d := range bi.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		f.Deps[d.Path] = d.Version
	}
}

// versionParts are the parts --version names, by the module they are.
var versionParts = []struct{ name, module string }{
	{"sarama", "github.com/IBM/sarama"},
	{"badger", "github.com/dgraph-io/badger/v4"},
	{"bubbletea", "github.com/charmbracelet/bubbletea"},
}

// print writes the facts: the version first, then one part a line.
func (f buildFacts) print(w io.Writer) {
	var b strings.Builder
	fmt.Fprintf(&b, "faultline %s\n", f.Version)
	c := f.Commit
	switch {
	case c == "":
		c = "not recorded in this build"
	case f.CommitTime != "":
		c += " (" + f.CommitTime + ")"
	}
	if f.Modified {
		c += ", with changes not committed"
	}
	fmt.Fprintf(&b, "  commit     %s\n", c)
	fmt.Fprintf(&b, "  go         %s %s\n", f.Go, f.Platform)
	for _, p := range versionParts {
		v := f.Deps[p.module]
		if v == "" {
			v = "not in this build"
		}
		fmt.Fprintf(&b, "  %-10s %s\n", p.name, v)
	}
	fmt.Fprintf(&b, "  %-10s %s\n", "broker", broker.Version)
	io.WriteString(w, b.String())
}

// newVersionCmd is `faultline version`, which says what --version says.
func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print faultline's version, commit, Go version and the versions of its main parts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			readBuildFacts().print(cmd.OutOrStdout())
			return nil
		},
	}
}

// setVersion gives root a --version flag that prints the same.
func setVersion(root *cobra.Command) {
	f := readBuildFacts()
	var b strings.Builder
	f.print(&b)
	root.Version = f.Version
	root.SetVersionTemplate(b.String())
}
