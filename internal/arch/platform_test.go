package arch

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// faultline builds for Linux and macOS. For Windows the build stops at
// once, with one line that says why, not with the errors of the packages
// that need Unix.
func TestWindowsBuildSaysWhy(t *testing.T) {
	cmd := exec.Command("go", "build", "-o", os.DevNull, project)
	cmd.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "faultline does not build for Windows: it needs Linux or macOS; on Windows, run it in WSL 2") {
		t.Fatalf("GOOS=windows go build: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "internal/") {
		t.Errorf("the Windows build went on to the packages that need Unix:\n%s", out)
	}
}
