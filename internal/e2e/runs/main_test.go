package runs

import (
	"testing"

	"github.com/faultline-dev/faultline/internal/e2e"
)

func TestMain(m *testing.M) { e2e.Main(m) }
