package cli

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/natefinch/lumberjack.v2"
)

// The log keeps records from its level up, in the form asked for; lines
// written by a *log.Logger (the engine's, Sarama's) become INFO records.
func TestLogLevelsAndForms(t *testing.T) {
	var b bytes.Buffer
	l := slog.New(logHandler(&b, "json", logLevels["warn"]))
	l.Info("routine")
	l.Warn("flush failed", "topic", "revenue")
	slogLines{l}.Write([]byte("a line from Sarama\n"))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("at warn, the log kept %d records:\n%s", len(lines), b.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil || rec["level"] != "WARN" || rec["topic"] != "revenue" {
		t.Fatalf("record %s (%v)", lines[0], err)
	}
	b.Reset()
	l = slog.New(logHandler(&b, "text", logLevels["info"]))
	slogLines{l.With("component", "sarama")}.Write([]byte("Connected to broker\n"))
	if got := b.String(); !strings.Contains(got, `level=INFO msg="Connected to broker" component=sarama`) {
		t.Fatalf("text record %q", got)
	}
	for _, bad := range []runOptions{{logLevel: "loud", logFormat: "text"}, {logLevel: "info", logFormat: "xml"}} {
		if err := bad.checkLogFlags(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// What is written to the log after it closed is dropped, not a reopened
// file.
func TestLogDropsWritesAfterClose(t *testing.T) {
	p := filepath.Join(t.TempDir(), "faultline.log")
	w := &closingWriter{w: &lumberjack.Logger{Filename: p}}
	w.Write([]byte("before\n"))
	w.Close()
	os.Remove(p)
	if n, err := w.Write([]byte("after\n")); err != nil || n != 6 {
		t.Fatalf("write after close: %d, %v", n, err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("the log came back after close: %v", err)
	}
}
