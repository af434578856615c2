//go:build release

// Package release checks faultline as a user installs it: go install of
// the module at a version, from a module proxy that serves this checkout's
// HEAD, and goreleaser's check of the release configuration. `make
// test-release` runs it (it builds faultline and goreleaser from source:
// minutes, which `make test` has no room for).
package release

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

const modulePath = "github.com/faultline-dev/faultline"

// repoRoot is the checkout's root: where go.mod is.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// serve writes a file:// module proxy into dir that serves the checkout's
// HEAD as modulePath at version.
func serve(t *testing.T, root, dir, version string) {
	t.Helper()
	at := filepath.Join(dir, modulePath, "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	z, err := os.Create(filepath.Join(at, version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	if err := zip.CreateFromVCS(z, module.Version{Path: modulePath, Version: version}, root, "HEAD", ""); err != nil {
		t.Fatalf("zip the checkout's HEAD: %v", err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]any{"Version": version, "Time": time.Now().UTC()})
	for name, content := range map[string][]byte{"list": []byte(version + "\n"), version + ".info": info, version + ".mod": mod} {
		if err := os.WriteFile(filepath.Join(at, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// go install MODULE@VERSION from a proxy of the checkout builds a
// faultline whose version is that version.
func TestGoInstallAtAVersion(t *testing.T) {
	root := repoRoot(t)
	proxy, bin := t.TempDir(), t.TempDir()
	const version = "v0.9.0"
	serve(t, root, proxy, version)
	cmd := exec.Command("go", "install", modulePath+"@"+version)
	cmd.Dir = t.TempDir() // outside the checkout: as a user runs it
	// The module from the proxy, its dependencies from the module cache
	// (or, when missing there, nowhere: the test says so), checked against
	// the module's go.sum: the checksum database is not asked, as it is
	// not reachable from every machine that runs this.
	cmd.Env = append(os.Environ(), "GOPROXY=file://"+filepath.ToSlash(proxy)+",off", "GOSUMDB=off",
		"GOFLAGS=-mod=mod", "GOBIN="+bin, "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install %s@%s: %v\n%s", modulePath, version, err, out)
	}
	out, err := exec.Command(filepath.Join(bin, "faultline"), "version").Output()
	if err != nil {
		t.Fatalf("faultline version: %v", err)
	}
	if first, _, _ := strings.Cut(string(out), "\n"); first != "faultline "+version {
		t.Fatalf("faultline version says %q, want faultline %s:\n%s", first, version, out)
	}
	for _, part := range []string{"sarama     v", "badger     v", "bubbletea  v", "broker     kfake "} {
		if !strings.Contains(string(out), part) {
			t.Errorf("faultline version does not name %q:\n%s", part, out)
		}
	}
}

// goreleaser check passes on .goreleaser.yaml (goreleaser pinned by the
// tools/ module).
func TestGoreleaserCheck(t *testing.T) {
	cmd := exec.Command("go", "tool", "-modfile=tools/go.mod", "goreleaser", "check")
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("goreleaser check: %v\n%s", err, out)
	}
}

// goreleaser builds the release binaries for every target the
// configuration names (Linux and macOS, amd64 and arm64), with checksums.
func TestGoreleaserBuildsEveryTarget(t *testing.T) {
	root := repoRoot(t)
	dist := filepath.Join(root, "dist") // goreleaser's, emptied first by --clean
	cmd := exec.Command("go", "tool", "-modfile=tools/go.mod", "goreleaser", "release", "--snapshot", "--clean", "--skip=publish")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("goreleaser release --snapshot: %v\n%s", err, out)
	}
	for _, target := range []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64"} {
		if m, _ := filepath.Glob(filepath.Join(dist, "faultline_*_"+target+".tar.gz")); len(m) != 1 {
			t.Errorf("no archive for %s in %s", target, dist)
		}
	}
	if _, err := os.Stat(filepath.Join(dist, "checksums.txt")); err != nil {
		t.Errorf("no checksums: %v", err)
	}
}
