package view

import "testing"

// Flink's levels: OK up to 10 %, LOW up to 50 %, HIGH above.
func TestBackPressureOf(t *testing.T) {
	for ratio, want := range map[float64]BackPressure{0: BackPressureOK, 0.1: BackPressureOK, 0.11: BackPressureLow,
		0.5: BackPressureLow, 0.51: BackPressureHigh, 1: BackPressureHigh} {
		if got := BackPressureOf(ratio); got != want {
			t.Errorf("BackPressureOf(%v) = %s, want %s", ratio, got, want)
		}
	}
}
