package cli

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/IBM/sarama"
)

// A run's Sarama goroutines may still log while the next run (a tour's)
// takes the log over: under -race, assigning sarama.Logger per run raced
// with them. The destination switches instead, and each line lands whole
// in the log of the run that had it then.
func TestSaramaLogSwitchesWhileSaramaLogs(t *testing.T) {
	var first, second bytes.Buffer
	logSaramaTo(&first)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				sarama.Logger.Printf("a line from Sarama")
			}
		}()
	}
	logSaramaTo(&second)
	wg.Wait()
	logSaramaTo(io.Discard)
	lines := strings.Count(first.String(), "\n") + strings.Count(second.String(), "\n")
	if lines != 400 || strings.Count(first.String()+second.String(), "a line from Sarama\n") != 400 {
		t.Fatalf("%d lines in the two logs, want 400 whole ones:\n%s%s", lines, first.String(), second.String())
	}
}
