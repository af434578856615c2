package cli

import (
	"errors"
	"strings"
	"testing"
	"time"
)

type injected struct {
	fault, task string
	d           time.Duration
	err         error
}

func (i *injected) InjectFor(fault, task string, d time.Duration) error {
	i.fault, i.task, i.d = fault, task, d
	return i.err
}

// A control record injects the fault it names for as long as it says; a
// record that names none, or a fault the job cannot take, is said.
func TestAControlRecordInjectsItsFault(t *testing.T) {
	var got injected
	if err := injectControl(&got, []byte(`{"fault":"slow","task":"join/1","factor":10,"duration_ms":3000,"id":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if got.fault != "slow" || got.task != "join/1" || got.d != 3*time.Second {
		t.Fatalf("injected %+v", got)
	}
	for _, bad := range []string{`garbage`, `{"fault":"panic"}`, `{"task":"join/0"}`} {
		if err := injectControl(&got, []byte(bad)); err == nil || !strings.Contains(err.Error(), "is not a fault") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	got.err = errors.New("no subtask nope/0")
	if err := injectControl(&got, []byte(`{"fault":"panic","task":"nope/0"}`)); err == nil || !strings.Contains(err.Error(), "panic for nope/0: no subtask") {
		t.Errorf("a fault the job cannot take: %v", err)
	}
}
