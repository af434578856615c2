package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// cited is a span in backticks that names code: a Go identifier in mixed
// case (`finishInFlight`, `TaskMetrics`), or one
// qualified by a type or package (`task.persistAsync`), with () for a
// call; or a Go file (`jobrun.go`).
var (
	backticked = regexp.MustCompile("`([^`\n]+)`")
	goName     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*(\(\))?$`)
	camel      = regexp.MustCompile(`[a-z][A-Z]|^[A-Z][a-z0-9]+[A-Z]`)
	dataFile   = regexp.MustCompile(`\.(json|yaml|yml|txt|md|log)$`)
	goFile     = regexp.MustCompile(`^[a-z0-9_]+\.go$`)
)

// declared is every name the module's Go files declare (types, functions
// and methods, fields, interface methods, variables and constants, local
// ones and tests included) or use from another package, and every package
// name and Go file name, outside third_party.
type declared struct {
	names, files map[string]bool
}

func declaredNames(t *testing.T, root string) declared {
	t.Helper()
	d := declared{names: map[string]bool{}, files: map[string]bool{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if n := e.Name(); n == "third_party" || n == "build" || strings.HasPrefix(n, ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		d.files[e.Name()] = true
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		d.names[f.Name.Name] = true
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				d.names[n.Name.Name] = true
			case *ast.TypeSpec:
				d.names[n.Name.Name] = true
			case *ast.ValueSpec:
				for _, id := range n.Names {
					d.names[id.Name] = true
				}
			case *ast.Field:
				for _, id := range n.Names {
					d.names[id.Name] = true
				}
			case *ast.AssignStmt:
				if n.Tok == token.DEFINE {
					for _, e := range n.Lhs {
						if id, ok := e.(*ast.Ident); ok {
							d.names[id.Name] = true
						}
					}
				}
			case *ast.SelectorExpr:
				// What the code uses of another package (debug.SetCrashOutput,
				// kmsg.InitProducerID) is there too.
				d.names[n.Sel.Name] = true
				if id, ok := n.X.(*ast.Ident); ok {
					d.names[id.Name] = true
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// knows reports whether the code declares what span cites.
func (d declared) knows(span string) (bool, bool) {
	if goFile.MatchString(span) {
		return d.files[span], true
	}
	if !goName.MatchString(span) || dataFile.MatchString(span) || !strings.Contains(span, ".") && !camel.MatchString(span) {
		return false, false // not a code name: a flag, a key, a glyph, a word
	}
	for _, part := range strings.Split(strings.TrimSuffix(span, "()"), ".") {
		if !d.names[part] {
			return false, true
		}
	}
	return true, true
}

// Every identifier and Go file docs/ARCHITECTURE.md cites in backticks
// exists in the code, so that a rename cannot leave the map pointing at
// nothing. Names of Flink's and other projects' code are cited without
// backticks, or with their project's name in the same span.
func TestArchitectureCitesOnlyWhatExists(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	d := declaredNames(t, root)
	checked := 0
	for _, m := range backticked.FindAllStringSubmatch(string(doc), -1) {
		ok, isCode := d.knows(m[1])
		if !isCode {
			continue
		}
		checked++
		if !ok {
			t.Errorf("docs/ARCHITECTURE.md cites `%s`, which the code does not declare", m[1])
		}
	}
	if checked < 100 {
		t.Fatalf("only %d spans read as code names: the test no longer recognises them", checked)
	}
}
