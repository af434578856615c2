package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Version names the kfake upstream version and the number of patches that
// third_party/kfake's README.faultline.md and patches/ hold.
func TestVersionIsTheVendoredKfakes(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "third_party", "kfake")
	readme, err := os.ReadFile(filepath.Join(dir, "README.faultline.md"))
	if err != nil {
		t.Fatal(err)
	}
	upstream := regexp.MustCompile(`v0\.0\.0-\d{14}-[0-9a-f]{12}`).FindString(string(readme))
	patches, _ := filepath.Glob(filepath.Join(dir, "patches", "*.patch"))
	if upstream == "" || !strings.Contains(Version, "kfake "+upstream+" ") {
		t.Errorf("Version %q does not name the upstream version %q of README.faultline.md", Version, upstream)
	}
	if want := fmt.Sprintf("with faultline's %d patches", len(patches)); !strings.HasSuffix(Version, want) {
		t.Errorf("Version %q, want it to end %q", Version, want)
	}
}
