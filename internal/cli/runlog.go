package cli

import (
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"gopkg.in/natefinch/lumberjack.v2"
)

// The run's log: log/slog records, text or JSON (--log-format), from
// --log-level up, into --log-file or faultline.log in the state dir, which
// rotates at logMaxMB keeping logBackups older ones. Sarama's log goes
// there too, as records of component sarama.
const (
	logMaxMB   = 32
	logBackups = 3
)

// logLevels are --log-level's words.
var logLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

// checkLogFlags checks --log-level and --log-format before anything starts.
func (o *runOptions) checkLogFlags() error {
	if _, ok := logLevels[o.logLevel]; !ok {
		return usagef("--log-level %q: want debug, info, warn or error", o.logLevel)
	}
	if o.logFormat != "text" && o.logFormat != "json" {
		return usagef("--log-format %q: want text or json", o.logFormat)
	}
	return nil
}

// openLog opens the run's log (see above): r.log for records with a
// level, r.logger for the lines of the engine and the command, which are
// records at INFO.
func (r *runState) openLog() error {
	o := r.o
	r.logPath = o.logFile
	if r.logPath == "" {
		r.logPath = filepath.Join(r.stateDir, "faultline.log")
	}
	// lumberjack opens the file at the first record: find a path that
	// cannot be written now, before the run starts.
	lf, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		if o.logFile != "" {
			return usagef("--log-file %s: %v", o.logFile, errors.Unwrap(err))
		}
		return fmt.Errorf("log file: %w", err)
	}
	lf.Close()
	w := &closingWriter{w: &lumberjack.Logger{Filename: r.logPath, MaxSize: logMaxMB, MaxBackups: logBackups}}
	h := logHandler(w, o.logFormat, logLevels[o.logLevel])
	r.log = slog.New(h)
	r.logger = slog.NewLogLogger(h, slog.LevelInfo)
	logSaramaTo(slogLines{r.log.With("component", "sarama")})
	r.onClose(func() { logSaramaTo(io.Discard); w.Close() })
	return nil
}

// logHandler is the slog handler of a log in format at level into w.
func logHandler(w io.Writer, format string, level slog.Level) slog.Handler {
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}

// slogLines turns each line written to it (a *log.Logger's, Sarama's)
// into a record at INFO.
type slogLines struct{ l *slog.Logger }

func (s slogLines) Write(p []byte) (int, error) {
	s.l.Info(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

var _ io.Writer = slogLines{}

// newSaramaLogger is the *log.Logger Sarama logs with: no prefix or time
// of its own, as each line becomes a record.
func newSaramaLogger(w io.Writer) *log.Logger { return log.New(w, "", 0) }

// closingWriter drops what is written after Close: a late writer (a
// goroutine winding down, a request still answered) must not reopen the
// log file lumberjack closed.
type closingWriter struct {
	mu     sync.Mutex
	w      io.WriteCloser
	closed bool
}

func (c *closingWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return len(p), nil
	}
	return c.w.Write(p)
}

func (c *closingWriter) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return c.w.Close()
}
