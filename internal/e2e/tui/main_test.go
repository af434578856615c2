package tui

import (
	"testing"

	"faultline/internal/e2e"
)

func TestMain(m *testing.M) { e2e.MainPlain(m) }
