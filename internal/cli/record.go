package cli

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"gopkg.in/natefinch/lumberjack.v2"

	"github.com/faultline-dev/faultline/runtime/view"
)

// The record of a session: the terminal UI writes the events the headless
// mode prints, and the report, as JSON lines into the state dir's
// eventsFile (or --events-file, headless too), so that a demo that went
// wrong can be examined afterwards. The file rotates at recordMaxMB,
// keeping recordBackups older ones: its size stays bounded however long
// the sessions run. Each session appends; its run_started begins it.
const (
	eventsFile    = "events.jsonl"
	recordMaxMB   = 16
	recordBackups = 3
)

// recorder writes JSON lines into a rotating file. A write that fails (a
// full disk) stops the recording and is logged once: the run goes on.
type recorder struct {
	mu     sync.Mutex
	w      *lumberjack.Logger
	enc    *json.Encoder
	failed bool
	log    *slog.Logger
}

// openRecord starts the run's record, when it keeps one: --events-file,
// or the state dir's eventsFile in front of the terminal UI (not a tour's,
// whose state dir goes with it).
func (r *runState) openRecord() error {
	o := r.o
	path := o.eventsFile
	if path == "" {
		if o.headless || o.front != nil {
			return nil
		}
		path = filepath.Join(r.stateDir, eventsFile)
	} else if f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return usagef("--events-file %s: %v", path, errors.Unwrap(err))
	} else {
		f.Close()
	}
	endLine(path)
	w := &lumberjack.Logger{Filename: path, MaxSize: recordMaxMB, MaxBackups: recordBackups}
	r.rec = &recorder{w: w, enc: json.NewEncoder(w), log: r.log}
	r.onClose(r.rec.close)
	return nil
}

// write appends v as a JSON line (nothing on a nil recorder).
func (rec *recorder) write(v any) {
	if rec == nil {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.failed {
		return
	}
	if err := rec.enc.Encode(v); err != nil {
		rec.failed = true
		rec.log.Warn("the session's record stops here: its file cannot be written", "file", rec.w.Filename, "err", err)
	}
}

func (rec *recorder) close() {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.failed = true
	rec.w.Close()
}

// tee records each event of in and passes it on; an event the reader
// has no room for is dropped from what it reads (as the observer drops
// one it has no room for), never from the record. done closes once every
// event of in is recorded.
func (rec *recorder) tee(in <-chan view.Stamped) (out <-chan view.Stamped, done <-chan struct{}) {
	finished := make(chan struct{})
	if rec == nil {
		close(finished)
		return in, finished
	}
	ch := make(chan view.Stamped, cap(in))
	go func() {
		defer close(finished)
		defer close(ch)
		for e := range in {
			rec.write(e)
			select {
			case ch <- e:
			default:
			}
		}
	}()
	return ch, finished
}

// path is the record's file ("" when none).
func (rec *recorder) path() string {
	if rec == nil {
		return ""
	}
	return rec.w.Filename
}

// endLine ends the last line of the record at path when a killed process
// (or a full disk) left it cut: the next session's first line starts on a
// line of its own.
func endLine(path string) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return // none yet
	}
	defer f.Close()
	last := make([]byte, 1)
	if st, err := f.Stat(); err != nil || st.Size() == 0 {
		return
	} else if _, err := f.ReadAt(last, st.Size()-1); err != nil || last[0] == '\n' {
		return
	}
	f.Seek(0, io.SeekEnd)
	f.Write([]byte("\n"))
}
