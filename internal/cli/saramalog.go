package cli

import (
	"io"
	"sync"

	"github.com/IBM/sarama"
)

// saramaLog is where Sarama's log goes: the state dir's log of the run in
// progress. sarama.Logger is a global that Sarama's goroutines read as they
// go, some of them still winding down from the run before when a tour
// starts its next one; so it is set once per process, and a run switches
// the destination of that one logger under a lock instead of assigning
// the global again.
var saramaLog = &switchWriter{to: io.Discard}

var saramaLogOnce sync.Once

// logSaramaTo sends Sarama's log to w (io.Discard: nowhere) from now on.
func logSaramaTo(w io.Writer) {
	saramaLogOnce.Do(func() {
		sarama.Logger = newSaramaLogger(saramaLog)
	})
	saramaLog.set(w)
}

// switchWriter writes to a destination that can be switched while others
// write.
type switchWriter struct {
	mu sync.Mutex
	to io.Writer
}

func (s *switchWriter) set(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.to = w
}

func (s *switchWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.to.Write(p)
}
