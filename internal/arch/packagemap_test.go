package arch

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// packageRow is one row of the package map: its first cell's paths and the
// whole row.
var packageRow = regexp.MustCompile("(?m)^\\| (`[^|]+)\\|.*$")

// mapRows reads the package map of docs/ARCHITECTURE.md: each row's
// paths (the backticked spans of its first cell, a trailing "/…" cut) with
// the row's text.
func mapRows(t *testing.T, doc string) map[string]string {
	t.Helper()
	start := strings.Index(doc, "## Packages")
	end := strings.Index(doc, "Imports point one way")
	if start < 0 || end < start {
		t.Fatal(`docs/ARCHITECTURE.md has no "## Packages" map before "Imports point one way"`)
	}
	rows := map[string]string{}
	for _, m := range packageRow.FindAllStringSubmatch(doc[start:end], -1) {
		for _, span := range backticked.FindAllStringSubmatch(m[1], -1) {
			rows[strings.TrimSuffix(span[1], "/…")] = m[0]
		}
	}
	return rows
}

// named reports whether the package map names the package at p (a path in
// the module): by a row of its own, or in the row of a folder above it,
// which names p's last element in backticks.
func named(rows map[string]string, p string) bool {
	if _, ok := rows[p]; ok {
		return true
	}
	for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
		if row, ok := rows[dir]; ok && strings.Contains(row, "`"+path.Base(p)+"`") {
			return true
		}
	}
	return false
}

// The package map is drawn from the code: every package of the module
// (but the vendored broker's) has its row, or is named in its folder's.
func TestPackageMapNamesEveryPackage(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := mapRows(t, string(doc))
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, project), "/")
		if rel == "" {
			rel = "main"
		}
		if under(p.ImportPath, project+"/third_party") {
			continue
		}
		if !named(rows, rel) {
			t.Errorf("docs/ARCHITECTURE.md's package map does not name %s", rel)
		}
	}
}
