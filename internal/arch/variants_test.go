package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// variants are the types of the Go package in dir with a method named
// marker: the members of a sealed interface (the master's events and
// actions, the coordinator's effects).
func variants(t *testing.T, dir, marker string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != marker {
				continue
			}
			typ := fn.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			out = append(out, typ.(*ast.Ident).Name)
		}
	}
	sort.Strings(out)
	return out
}

// section is the text of docs/ARCHITECTURE.md under the heading title, up
// to the next heading of its level.
func section(t *testing.T, title string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "\n## "+title+"\n")
	if !ok {
		t.Fatalf("docs/ARCHITECTURE.md has no section %q", title)
	}
	body, _, _ := strings.Cut(rest, "\n## ")
	return body
}

// The sections that draw a state machine name every event it takes and
// every action or effect it returns, as the code has them.
func TestArchitectureNamesEveryEventAndAction(t *testing.T) {
	for _, c := range []struct{ dir, marker, section string }{
		{"runtime/master", "event", "The job master: events and actions"},
		{"runtime/master", "action", "The job master: events and actions"},
		{"checkpoint", "isEffect", "The coordinator's effects"},
	} {
		types := variants(t, filepath.Join("..", "..", c.dir), c.marker)
		if len(types) < 5 {
			t.Fatalf("%s: only %d types with a method %s: the test no longer finds them", c.dir, len(types), c.marker)
		}
		text := section(t, c.section)
		for _, typ := range types {
			if !strings.Contains(text, "`"+typ+"`") {
				t.Errorf("docs/ARCHITECTURE.md, %q, does not name %s's %s `%s`", c.section, c.dir, c.marker, typ)
			}
		}
	}
}
