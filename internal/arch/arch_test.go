package arch

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// pkg is what `go list -json` says of a package.
type pkg struct {
	ImportPath string
	Dir        string
	Imports    []string
	GoFiles    []string
}

// listPackages lists the module's packages with their imports.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "faultline/...")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(out)
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// rule forbids the packages under from to import the packages under any
// of not (a path, or a path and everything under it).
type rule struct {
	from string
	not  []string
	why  string
}

// under reports whether path is prefix or a package below it.
func under(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// The rules of docs/ARCHITECTURE.md ("Imports point one way").
var rules = []rule{
	{"faultline/restart", []string{"faultline"}, "restart decides on plain names and errors: it imports no project package"},
	{"faultline/checkpoint", []string{"faultline/runtime", "faultline/tui", "faultline/internal/cli"}, "checkpoint knows nothing of the engine or the UI"},
	{"faultline/backend", []string{"faultline/runtime", "faultline/tui", "faultline/checkpoint", "faultline/internal/cli"}, "state backends know nothing of the engine, the UI or the checkpoint store"},
	{"faultline/runtime", []string{"faultline/tui", "faultline/internal/cli"}, "the engine never calls into the UI or the command line"},
	{"faultline/runtime/verify", []string{"faultline/runtime", "faultline/checkpoint", "faultline/backend", "faultline/restart"}, "the oracle's ledger imports nothing of the engine"},
	{"faultline/runtime/barrier", []string{"faultline"}, "barrier handlers are pure state machines"},
	{"faultline/runtime/spec", []string{"faultline"}, "job specs are plain data"},
	{"faultline/internal/clock", []string{"faultline"}, "the clock is a leaf"},
	{"faultline/internal/supervise", []string{"faultline"}, "the supervisor is a leaf"},
	{"faultline/internal/diskroom", []string{"faultline"}, "the disk check is a leaf"},
	{"faultline/internal/dbclose", []string{"faultline"}, "closing Badger is a leaf"},
	{"faultline/tui", []string{"faultline/internal/cli"}, "the UI is driven through its Controller, never the command line"},
}

// broken returns the imports of the packages in pkgs that break a rule.
func broken(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		for _, r := range rules {
			if !under(p.ImportPath, r.from) {
				continue
			}
			for _, imp := range p.Imports {
				for _, n := range r.not {
					// A package may import what lies below itself.
					if under(imp, n) && !under(imp, r.from) {
						out = append(out, p.ImportPath+" imports "+imp+": "+r.why)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestImportsPointOneWay fails on any import that crosses the rules.
func TestImportsPointOneWay(t *testing.T) {
	for _, b := range broken(listPackages(t)) {
		t.Error(b)
	}
}

// The rules catch what they are for: a forbidden import is reported.
func TestRulesCatchAForbiddenImport(t *testing.T) {
	got := broken([]pkg{
		{ImportPath: "faultline/restart", Imports: []string{"fmt", "faultline/runtime"}},
		{ImportPath: "faultline/checkpoint", Imports: []string{"faultline/internal/clock", "faultline/runtime/spec"}},
		{ImportPath: "faultline/runtime/kafka", Imports: []string{"faultline/runtime", "faultline/tui"}},
	})
	want := []string{
		"faultline/checkpoint imports faultline/runtime/spec: checkpoint knows nothing of the engine or the UI",
		"faultline/restart imports faultline/runtime: restart decides on plain names and errors: it imports no project package",
		"faultline/runtime/kafka imports faultline/tui: the engine never calls into the UI or the command line",
	}
	if !slices.Equal(got, want) {
		t.Errorf("broken =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The root of the repository holds only main.go: the program starts there
// and nothing else lives there.
func TestRootHoldsOnlyMain(t *testing.T) {
	for _, p := range listPackages(t) {
		if p.ImportPath != "faultline" {
			continue
		}
		if !slices.Equal(p.GoFiles, []string{"main.go"}) {
			t.Errorf("the root package has %v; only main.go belongs there", p.GoFiles)
		}
		others, _ := filepath.Glob(filepath.Join(p.Dir, "*_test.go"))
		if len(others) > 0 {
			t.Errorf("test files in the root: %v", others)
		}
	}
}
