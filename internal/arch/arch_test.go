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
	cmd := exec.Command("go", "list", "-json", project+"/...")
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
	from  string
	not   []string
	why   string
	allow []string // exceptions to not
}

// under reports whether path is prefix or a package below it.
func under(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// testHelpers are packages of helpers for tests only: no package's own code
// imports one (TestOnlyTestsImportTheTestHelpers). What they import is what
// the tests they serve import, which the rules leave alone: a job as the
// tests' fixture (TestTheEngineNamesNoJob does not count them), and the
// packages beside them.
// project is the module's path, which every package's path starts with.
const project = "github.com/faultline-dev/faultline"

var testHelpers = []string{project + "/runtime/kafka/internal/kafkatest", project + "/internal/rest/resttest"}

// The rules of docs/ARCHITECTURE.md ("Imports point one way").
var rules = []rule{
	{project + "/restart", []string{project}, "restart decides on plain names and errors: it imports no project package", nil},
	{project + "/checkpoint", []string{project + "/runtime", project + "/tui", project + "/internal/cli"}, "checkpoint knows nothing of the engine or the UI", nil},
	{project + "/backend", []string{project + "/runtime", project + "/tui", project + "/checkpoint", project + "/internal/cli"}, "state backends know nothing of the engine, the UI or the checkpoint store", nil},
	{project + "/runtime", []string{project + "/tui", project + "/internal/cli"}, "the engine never calls into the UI or the command line", nil},
	{project + "/runtime", []string{project + "/checkpoint/badgerstore"}, "the engine takes a checkpoint.Store: which store holds a state dir is the command line's choice", nil},
	{project + "/runtime/verify", []string{project}, "the oracle judges the output on its own: it imports nothing of the engine", []string{project + "/runtime/flatjson", project + "/runtime/spec", project + "/internal/atomicfile"}},
	{project + "/runtime/flatjson", []string{project}, "the record scanner is a leaf", nil},
	{project + "/runtime/barrier", []string{project}, "barrier handlers are pure state machines", nil},
	{project + "/runtime/fault", []string{project}, "the fault catalogue and its spelled form are plain data", nil},
	{project + "/runtime/master", []string{project}, "the job master's decisions are a pure state machine over the failure handler's", []string{project + "/restart", project + "/runtime/view"}},
	{project + "/runtime/spec", []string{project}, "job specs are plain data", []string{project + "/internal/smallfile"}},
	{project + "/internal/clock", []string{project}, "the clock is a leaf", nil},
	{project + "/internal/supervise", []string{project}, "the supervisor is a leaf", nil},
	{project + "/internal/diskroom", []string{project}, "the disk check is a leaf", nil},
	{project + "/internal/dbclose", []string{project}, "closing Badger is a leaf", nil},
	{project + "/internal/atomicfile", []string{project}, "writing a file whole is a leaf", nil},
	{project + "/internal/smallfile", []string{project}, "reading a small file a user names is a leaf", nil},
	{project + "/internal/flinkconf", []string{project}, "reading Flink's configuration format is a leaf: the command line knows the keys", nil},
	{project + "/internal/metrics", []string{project}, "the metrics read the job's plain view, as the UI does", []string{project + "/runtime/view"}},
	{project + "/internal/rest", []string{project}, "the REST API reads the job's plain view and drives it through its own Job interface, as the UI does", []string{project + "/runtime/view", project + "/internal/atomicfile", project + "/internal/rest/resttest"}},
	{project + "/internal/replay", []string{project}, "a replay folds recorded events into the UI's plain view: it knows nothing of the engine", []string{project + "/runtime/view"}},
	{project + "/internal/kafkalane", []string{project}, "the Kafka lane's broker counts with Kafka's own tools: it imports nothing of faultline", nil},
	{project + "/internal/e2e", []string{project}, "the end-to-end tests drive the built program as a user does: their helpers import nothing of faultline", nil},
	{project + "/runtime/view", []string{project}, "the UI's view is plain data: it imports nothing of the engine", nil},
	{project + "/internal/tour", []string{project + "/tui", project + "/internal/cli", project + "/runtime"}, "a tour drives the job through its Driver, as the UI's keys do: it knows nothing of the UI, the commands or the engine (only its plain data: view, spec, the fault catalogue)", []string{project + "/runtime/view", project + "/runtime/spec", project + "/runtime/fault"}},
	{project + "/fixtures", []string{project}, "fixtures are files, built in", nil},
	{project + "/tui", []string{project}, "the UI draws the plain data of runtime/view and imports nothing of the engine", []string{project + "/runtime/view"}},
	{project + "/tui/common", []string{project + "/tui"}, "what the UI's components share imports neither the root UI nor a component", nil},
}

// apart holds the packages directly below each path apart: such a package
// (with what lies below it) imports no sibling, nor what lies below one.
var apart = []struct{ path, why string }{
	{project + "/tui/components", "a component imports no other component: what they share is in tui/common"},
	{project + "/runtime/kafka", "a Kafka role (source, sink, broker, live, fill) imports no other: what they share is in runtime/kafka"},
}

// own is the package directly below parent that path lies in, or "" when
// path does not lie below parent.
func own(path, parent string) string {
	rest, ok := strings.CutPrefix(path, parent+"/")
	if !ok {
		return ""
	}
	child, _, _ := strings.Cut(rest, "/")
	return parent + "/" + child
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
				allowed := slices.ContainsFunc(r.allow, func(a string) bool { return under(imp, a) })
				for _, n := range r.not {
					// A package may import what lies below itself.
					if under(imp, n) && !under(imp, r.from) && !allowed {
						out = append(out, p.ImportPath+" imports "+imp+": "+r.why)
					}
				}
			}
		}
		for _, a := range apart {
			self := own(p.ImportPath, a.path)
			if slices.Contains(testHelpers, p.ImportPath) {
				self = "" // see testHelpers
			}
			for _, imp := range p.Imports {
				if self != "" && own(imp, a.path) != "" && !under(imp, self) {
					out = append(out, p.ImportPath+" imports "+imp+": "+a.why)
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

// The UI builds without the engine and its libraries: nothing of Badger,
// Sarama or the engine's packages is among the dependencies of tui or of
// any package below it.
func TestUIBuildsWithoutTheEngine(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", project+"/tui/...").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "badger") || strings.Contains(dep, "sarama") || strings.Contains(dep, "franz-go") ||
			strings.HasPrefix(dep, project+"/") && !under(dep, project+"/tui") && dep != project+"/runtime/view" {
			t.Errorf("the UI depends on %s", dep)
		}
	}
}

// Only tests import the end-to-end tests' helpers and the other test
// helpers: no package's own code does.
func TestOnlyTestsImportTheTestHelpers(t *testing.T) {
	for _, p := range listPackages(t) {
		for _, h := range append([]string{project + "/internal/e2e"}, testHelpers...) {
			if slices.Contains(p.Imports, h) {
				t.Errorf("%s imports %s: only tests may", p.ImportPath, h)
			}
		}
	}
}

// The rules catch what they are for: a forbidden import is reported.
func TestRulesCatchAForbiddenImport(t *testing.T) {
	got := broken([]pkg{
		{ImportPath: project + "/restart", Imports: []string{"fmt", project + "/runtime"}},
		{ImportPath: project + "/checkpoint", Imports: []string{project + "/internal/clock", project + "/runtime/spec"}},
		{ImportPath: project + "/runtime/kafka", Imports: []string{project + "/runtime", project + "/tui"}},
		{ImportPath: project + "/tui", Imports: []string{project + "/runtime/view", project + "/checkpoint"}},
		{ImportPath: project + "/tui/components/graph", Imports: []string{project + "/tui/common", project + "/runtime/view", project + "/runtime"}},
		{ImportPath: project + "/tui/components/detail", Imports: []string{project + "/tui/common", project + "/tui/components/checkpoints"}},
		{ImportPath: project + "/tui/components/graph/strip", Imports: []string{project + "/tui/components/graph"}},
		{ImportPath: project + "/tui/common", Imports: []string{project + "/runtime/view", project + "/tui/components/graph"}},
		{ImportPath: project + "/runtime/kafka/live", Imports: []string{project + "/runtime/kafka", project + "/runtime/kafka/sink", project + "/checkpoint"}},
		{ImportPath: project + "/runtime/kafka/internal/kafkatest", Imports: []string{project + "/runtime/kafka", project + "/runtime/kafka/broker"}},
	})
	want := []string{
		project + "/checkpoint imports " + project + "/runtime/spec: checkpoint knows nothing of the engine or the UI",
		project + "/restart imports " + project + "/runtime: restart decides on plain names and errors: it imports no project package",
		project + "/runtime/kafka imports " + project + "/tui: the engine never calls into the UI or the command line",
		project + "/runtime/kafka/live imports " + project + "/runtime/kafka/sink: a Kafka role (source, sink, broker, live, fill) imports no other: what they share is in runtime/kafka",
		project + "/tui imports " + project + "/checkpoint: the UI draws the plain data of runtime/view and imports nothing of the engine",
		project + "/tui/common imports " + project + "/tui/components/graph: what the UI's components share imports neither the root UI nor a component",
		project + "/tui/components/detail imports " + project + "/tui/components/checkpoints: a component imports no other component: what they share is in tui/common",
		project + "/tui/components/graph imports " + project + "/runtime: the UI draws the plain data of runtime/view and imports nothing of the engine",
	}
	if !slices.Equal(got, want) {
		t.Errorf("broken =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The root of the repository holds only main.go: the program starts there
// and nothing else lives there.
func TestRootHoldsOnlyMain(t *testing.T) {
	for _, p := range listPackages(t) {
		if p.ImportPath != project {
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

// The engine names no job: a job's operators, records and input live in
// its own package under runtime/jobs and reach the engine as runtime.Types
// from the command line. No package of the engine imports one, nor does a
// job import another.
func TestTheEngineNamesNoJob(t *testing.T) {
	engine := []string{project + "/runtime", project + "/checkpoint", project + "/restart", project + "/backend"}
	for _, p := range listPackages(t) {
		job := own(p.ImportPath, project+"/runtime/jobs")
		inEngine := slices.ContainsFunc(engine, func(e string) bool { return under(p.ImportPath, e) }) && !slices.Contains(testHelpers, p.ImportPath)
		for _, imp := range p.Imports {
			if !under(imp, project+"/runtime/jobs") {
				continue
			}
			if job == "" && inEngine || job != "" && !under(imp, job) {
				t.Errorf("%s imports %s: the engine names no job, and a job no other", p.ImportPath, imp)
			}
		}
	}
}
