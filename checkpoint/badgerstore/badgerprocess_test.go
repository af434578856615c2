package badgerstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
)

func TestBadgerStoreLockedInProcess(t *testing.T) {
	dir := t.TempDir()
	s := openBadger(t, dir, 1)
	_, err := Open(dir, 1)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: err = %v, want ErrLocked", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, dir) || !strings.Contains(msg, fmt.Sprintf("(pid %d, `", os.Getpid())) || strings.Contains(msg, "Cannot acquire") {
		t.Errorf("second open: %q, want the directory and this process, no Badger message", msg)
	}
	t.Log(msg)
	closeStore(t, s)
	closeStore(t, openBadger(t, dir, 1))
}

// helperEnv makes the test binary act as another process holding a store:
// "hold" opens the store and waits; "churn" adds checkpoints until killed.
const helperEnv = "FAULTLINE_BADGER_HELPER"

// TestBadgerStoreHelperProcess is the other process of the lock and crash
// tests; it does nothing in a normal test run.
func TestBadgerStoreHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process of the lock and crash tests")
	}
	ctx := context.Background()
	s, err := Open(os.Getenv(helperEnv+"_DIR"), 2)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	fmt.Println("ready")
	go func() { // never outlive the parent test
		time.Sleep(2 * time.Minute)
		os.Exit(3)
	}()
	switch mode {
	case "hold":
		_, _ = io.Copy(io.Discard, os.Stdin)
	case "churn":
		tasks := []checkpoint.TaskID{src0, src1, {Operator: "join", Index: 0}, sink}
		for id := s.MaxID() + 1; ; id++ {
			c := &checkpoint.Completed{ID: id, Kind: checkpoint.Kind(id % 7 / 6), TriggerTime: t0, CompletionTime: t0, Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{}}
			for _, task := range tasks {
				h, err := s.PutState(ctx, id, task, blobOf(task, id, 500+int(id%5)*1000))
				if err != nil {
					fmt.Println("error:", err)
					os.Exit(2)
				}
				c.Tasks[task] = checkpoint.SubtaskAck{Handle: h, Offsets: checkpoint.Offsets{"orders": {int32(task.Index): id}}}
			}
			if err := s.Add(ctx, c); err != nil {
				fmt.Println("error:", err)
				os.Exit(2)
			}
			fmt.Printf("added %d\n", id)
		}
	}
	_ = s.Close()
	os.Exit(0)
}

// helper is a running helper process.
type helper struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr *bytes.Buffer
}

func startHelper(t *testing.T, mode, dir string) *helper {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("needs flock and SIGKILL")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBadgerStoreHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperEnv+"_DIR="+dir)
	h := &helper{cmd: cmd, lines: make(chan string, 1024), stderr: &bytes.Buffer{}}
	cmd.Stderr = h.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.StdinPipe(); err != nil { // open until the helper dies
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	go func() {
		defer close(h.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
	}()
	if line := h.next(t); line != "ready" {
		t.Fatalf("helper says %q, stderr %q", line, h.stderr.String())
	}
	return h
}

// next is the helper's next line of output, "" when it has exited.
func (h *helper) next(t *testing.T) string {
	t.Helper()
	select {
	case line := <-h.lines:
		return line
	case <-time.After(60 * time.Second):
		t.Fatalf("helper said nothing for a minute")
		return ""
	}
}

// kill sends SIGKILL to the helper, waits for it and returns what it printed
// until it died.
func (h *helper) kill(t *testing.T) []string {
	t.Helper()
	if err := h.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = h.cmd.Wait()
	var rest []string
	for line := range h.lines {
		rest = append(rest, line)
	}
	return rest
}

func TestBadgerStoreLockedByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	h := startHelper(t, "hold", dir)
	_, err := Open(dir, 1)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("open while the helper holds the store: err = %v, want ErrLocked", err)
	}
	msg := err.Error()
	t.Log(msg)
	for _, want := range []string{dir, fmt.Sprintf("(pid %d, `", h.cmd.Process.Pid), "TestBadgerStoreHelperProcess"} {
		if !strings.Contains(msg, want) {
			t.Errorf("lock error %q does not contain %q", msg, want)
		}
	}
	if strings.Contains(msg, "Cannot acquire") {
		t.Errorf("lock error %q shows Badger's message", msg)
	}

	h.kill(t) // SIGKILL: no Close, no cleanup
	if h.stderr.Len() > 0 {
		t.Errorf("the helper wrote to stderr: %q", h.stderr.String())
	}
	s := openBadger(t, dir, 1)
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil || !strings.Contains(string(b), `"pid":`+strconv.Itoa(os.Getpid())) {
		t.Errorf("OWNER = %q, %v; want this process", b, err)
	}
	putAndAdd(t, s, 1, checkpoint.KindCheckpoint, 10, sink)
}

// TestBadgerStoreSurvivesKill kills a process that adds checkpoints as fast
// as it can at a random moment, several times, and checks that every
// checkpoint whose Add returned is still there and intact, and that no
// orphan state is left.
func TestBadgerStoreSurvivesKill(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var lastAdded int64
	for round := range 5 {
		h := startHelper(t, "churn", dir)
		var printed []string
		for range 3 + rand.IntN(10) {
			printed = append(printed, h.next(t))
		}
		time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
		printed = append(printed, h.kill(t)...)
		for _, line := range printed {
			id, err := strconv.ParseInt(strings.TrimPrefix(line, "added "), 10, 64)
			if err != nil {
				t.Fatalf("helper says %q, stderr %q", line, h.stderr.String())
			}
			if id <= lastAdded {
				t.Errorf("round %d: added %d after %d", round, id, lastAdded)
			}
			lastAdded = id
		}

		s := openBadger(t, dir, 2)
		latest, err := s.Latest(ctx)
		if err != nil || latest == nil {
			t.Fatalf("round %d: Latest = %v, %v", round, latest, err)
		}
		t.Logf("round %d: last added %d, latest %d, max id %d", round, lastAdded, latest.ID, s.MaxID())
		// The Add in flight when the helper died may have committed.
		if latest.ID < lastAdded || latest.ID > lastAdded+1 || s.MaxID() != latest.ID {
			t.Errorf("round %d: Latest %d, MaxID %d; last added %d", round, latest.ID, s.MaxID(), lastAdded)
		}
		lastAdded = latest.ID
		all, err := s.All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		blobs := map[string]bool{}
		for _, c := range all {
			if err := s.Verify(ctx, c.ID); err != nil {
				t.Errorf("round %d: %v", round, err)
			}
			for _, a := range c.Tasks {
				blobs[a.Handle.Key] = true
			}
		}
		if d, err := s.Damaged(ctx); len(d) != 0 || err != nil {
			t.Errorf("round %d: Damaged = %v, %v", round, d, err)
		}
		if n := countBlobs(t, s); n != len(blobs) {
			t.Errorf("round %d: %d blobs on disk, %d referenced", round, n, len(blobs))
		}
		closeStore(t, s)
	}
}
