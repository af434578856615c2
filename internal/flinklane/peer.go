//go:build flink

package flinklane

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Peer is one run of bench/flink's PeerJob: a JVM with a local
// MiniCluster that runs the job, its REST API and what it printed.
type Peer struct {
	// REST is the base URL of the MiniCluster's REST API,
	// http://127.0.0.1:PORT.
	REST string
	// JobID is the job's id, as the program printed it on submission.
	JobID string
	// CheckpointDir is where the job's checkpoints go (Flink writes
	// CheckpointDir/<job id>/chk-N) and, under savepoints/, its savepoints.
	CheckpointDir string

	cmd    *exec.Cmd
	exited chan struct{} // closed when the JVM has exited and its stdout is read
	err    error         // the JVM's exit, once exited is closed

	mu    sync.Mutex
	lines []string // stdout so far
}

// startTimeout is how long StartPeer waits for the job to run: a JVM and a
// MiniCluster start in some 5 s on a quiet machine, far longer on a busy
// one.
const startTimeout = 90 * time.Second

// StartPeer starts PeerJob from the jars in lib against the Kafka at
// bootstrap, with opts (key=value, as PeerJob takes them), and returns once
// Flink's REST API says the job is RUNNING. The REST port and checkpoint
// dir are a free port and a dir under t's temporary dir unless opts name
// them. The JVM runs in a process group of its own, killed when t ends;
// its stdout and stderr are kept in files under t's temporary dir.
func StartPeer(t testing.TB, lib, bootstrap string, opts ...string) *Peer {
	t.Helper()
	p := &Peer{exited: make(chan struct{})}
	port := fmt.Sprint(freePort(t))
	p.CheckpointDir = filepath.Join(t.TempDir(), "checkpoints")
	for _, o := range opts {
		k, v, _ := strings.Cut(o, "=")
		switch k {
		case "rest-port":
			port = v
		case "checkpoint-dir":
			p.CheckpointDir = v
		}
	}
	p.REST = "http://127.0.0.1:" + port
	args := append([]string{"-Xms512m", "-Xmx1g", "-cp", filepath.Join(lib, "*"), "faultline.flink.PeerJob", bootstrap,
		"rest-port=" + port, "checkpoint-dir=" + p.CheckpointDir}, opts...)
	p.cmd = exec.Command("java", args...)
	logs := t.TempDir()
	stderr, err := os.Create(filepath.Join(logs, "stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stderr.Close() })
	p.cmd.Stderr = stderr
	p.cmd.SysProcAttr = procAttr()
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("java: %v (the Flink lane needs Java 17)", err)
	}
	t.Cleanup(p.Kill)
	submitted := make(chan string, 1)
	go p.read(out, filepath.Join(logs, "stdout.log"), submitted)
	t.Logf("PeerJob %s: stdout and stderr in %s", strings.Join(opts, " "), logs)
	p.waitRunning(t, submitted, stderr.Name())
	return p
}

// read keeps each line of the JVM's stdout (and copies it into file),
// sends the job id of the submission line on submitted, and waits for the
// JVM's exit once stdout ends.
func (p *Peer) read(out io.Reader, file string, submitted chan<- string) {
	defer close(p.exited)
	f, _ := os.Create(file)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if f != nil {
			fmt.Fprintln(f, line)
		}
		p.mu.Lock()
		p.lines = append(p.lines, line)
		p.mu.Unlock()
		var s struct {
			JobID string `json:"job_id"`
			REST  string `json:"rest"`
		}
		if json.Unmarshal([]byte(line), &s) == nil && s.REST != "" {
			submitted <- s.JobID
		}
	}
	if f != nil {
		f.Close()
	}
	p.err = p.cmd.Wait()
}

// waitRunning waits for the submission line and then for the REST API to
// say the job is RUNNING; it fails t with the end of the JVM's stderr when
// the JVM exits first or that takes longer than startTimeout.
func (p *Peer) waitRunning(t testing.TB, submitted <-chan string, stderr string) {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	select {
	case p.JobID = <-submitted:
	case <-p.exited:
		t.Fatalf("PeerJob exited before it submitted the job (%v); its stdout: %q; its stderr ends:\n%s", p.err, p.Lines(), tail(stderr, 40))
	case <-time.After(startTimeout):
		t.Fatalf("PeerJob submitted no job in %s; its stderr ends:\n%s", startTimeout, tail(stderr, 40))
	}
	for {
		state, err := p.State()
		if err == nil && state == "RUNNING" {
			return
		}
		select {
		case <-p.exited:
			t.Fatalf("PeerJob exited before its job ran (%v); its stdout: %q; its stderr ends:\n%s", p.err, p.Lines(), tail(stderr, 40))
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s not RUNNING after %s (state %q, %v); its stderr ends:\n%s", p.JobID, startTimeout, state, err, tail(stderr, 40))
		}
	}
}

// Kill kills the JVM (SIGKILL to its whole process group) and waits for
// it to exit.
func (p *Peer) Kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
}

// Wait waits at most timeout for the JVM to exit by itself and returns
// how it exited.
func (p *Peer) Wait(timeout time.Duration) error {
	select {
	case <-p.exited:
		return p.err
	case <-time.After(timeout):
		return fmt.Errorf("PeerJob still runs after %s", timeout)
	}
}

// Lines are the lines the JVM printed on stdout so far.
func (p *Peer) Lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.lines)
}

// chkDir is the name of a checkpoint's directory.
var chkDir = regexp.MustCompile(`^chk-([0-9]+)$`)

// errNoCheckpoint says that no retained checkpoint is complete yet.
var errNoCheckpoint = errors.New("no completed checkpoint under the checkpoint dir")

// LatestCheckpoint is the newest retained checkpoint under the checkpoint
// dir, of any job that used it: the chk-N directory whose _metadata (which
// Flink writes last) is newest, for PeerJob's restore=.
func (p *Peer) LatestCheckpoint() (string, error) {
	metas, err := filepath.Glob(filepath.Join(p.CheckpointDir, "*", "chk-*", "_metadata"))
	if err != nil {
		return "", err
	}
	var best string
	var bestTime time.Time
	var bestN int
	for _, m := range metas {
		dir := filepath.Dir(m)
		match := chkDir.FindStringSubmatch(filepath.Base(dir))
		fi, err := os.Stat(m)
		if match == nil || err != nil {
			continue
		}
		n, _ := strconv.Atoi(match[1])
		if best == "" || fi.ModTime().After(bestTime) || (fi.ModTime().Equal(bestTime) && n > bestN) {
			best, bestTime, bestN = dir, fi.ModTime(), n
		}
	}
	if best == "" {
		return "", fmt.Errorf("%s: %w", p.CheckpointDir, errNoCheckpoint)
	}
	return best, nil
}

// tail is the last n lines of file.
func tail(file string, n int) string {
	b, _ := os.ReadFile(file)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
