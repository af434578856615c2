// Package supervise runs the program as a child of itself, so that a crash
// never exits with a code that means something else.
//
// Go's runtime ends a process with exit code 2 on any panic it does not
// recover, in any goroutine (ours, Badger's, Sarama's or the embedded
// broker's), and on a fatal error such as a fault on a memory-mapped file.
// faultline documents 2 as "a bad flag or a bad job file", so a crash would
// read as the user's mistake. Main starts the same binary again as a child
// and waits for it: the child reports a usage error as ChildUsage, which the
// supervisor turns back into 2, and any exit 2 of the child is a crash,
// which the supervisor reports as CodeCrash with the crash report's file.
//
// The supervisor does nothing else. It shares the child's terminal and
// process group, forwards the stop signals sent to it alone (a terminal's
// Ctrl-C reaches both, see Again), and when it dies, even by SIGKILL, the
// child dies with it at once, as if the whole program had been killed.
// When a signal it was not sent kills the child (a SIGKILL of the child's
// pid alone), it says so in one line and dies by the same signal.
package supervise

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	goruntime "runtime"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"
	"golang.org/x/sys/unix"
)

// Exit codes the supervisor translates.
const (
	// CodeUsage is the documented code of a mistake in the command line.
	CodeUsage = 2
	// ChildUsage is how a supervised child reports CodeUsage, since its
	// own exit 2 means a crash.
	ChildUsage = 102
	// CodeCrash is the code of a crash of faultline itself (a bug): a
	// panic or a fatal error of the Go runtime (EX_SOFTWARE).
	CodeCrash = 70
)

const (
	// envChild marks a supervised child; its value is the file for the
	// crash report ("" for none).
	envChild = "FAULTLINE_SUPERVISED"
	// envOff turns the supervisor off (for a debugger).
	envOff = "FAULTLINE_NO_SUPERVISOR"
	// lifeline is the child's descriptor of the pipe whose write end only
	// the supervisor holds: it reads end of file once the supervisor is
	// gone.
	lifeline = 3
)

// Again is the least time between two stop signals for the second to count
// as a second one. A Ctrl-C typed at a terminal reaches the supervisor and
// the child at once, and the supervisor forwards its copy; both copies
// arrive within this time.
const Again = 500 * time.Millisecond

// Main runs run supervised and returns the process's exit code: in the
// child, run's code (with CodeUsage as ChildUsage); in the supervisor, the
// child's code translated back. name is the program's name for messages.
// When the child cannot be started, run runs in this process.
func Main(name string, run func() int) int {
	if crashFile, ok := os.LookupEnv(envChild); ok {
		return child(crashFile, run)
	}
	if os.Getenv(envOff) != "" {
		return run()
	}
	code, err := supervise(name)
	if err != nil {
		return run()
	}
	return code
}

// child runs run as the supervised child: its crash report goes to
// crashFile too, and it dies when the supervisor does.
func child(crashFile string, run func() int) int {
	os.Unsetenv(envChild)
	if crashFile != "" {
		if f, err := os.OpenFile(crashFile, os.O_WRONLY|os.O_APPEND, 0); err == nil {
			_ = debug.SetCrashOutput(f, debug.CrashOptions{})
			f.Close()
		}
	}
	if life := os.NewFile(lifeline, "supervisor"); life != nil {
		syscall.CloseOnExec(lifeline)
		go func() {
			io.Copy(io.Discard, life)
			// The supervisor is gone: die as it did, at once.
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}()
	}
	code := run()
	if code == CodeUsage {
		code = ChildUsage
	}
	return code
}

// forwarded are the signals the supervisor passes on to the child.
func forwarded() []os.Signal {
	sigs := []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}
	// Started to ignore hang-ups (nohup): the child inherits that.
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	return sigs
}

// supervise starts the child, waits for it and translates its end into
// this process's exit code. It returns an error only when the child could
// not be started.
func supervise(name string) (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	crashFile := ""
	if f, err := os.CreateTemp("", name+"-crash-*.txt"); err == nil {
		crashFile = f.Name()
		f.Close()
	}
	removeCrashFile := func() {
		if crashFile != "" {
			os.Remove(crashFile)
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		removeCrashFile()
		return 0, err
	}
	defer w.Close()
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), envChild+"="+crashFile)
	cmd.ExtraFiles = []*os.File{r}
	cmd.SysProcAttr = sysProcAttr()

	var tty *term.State
	if term.IsTerminal(os.Stdin.Fd()) {
		tty, _ = term.GetState(os.Stdin.Fd())
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded()...)
	defer signal.Stop(sigs)

	// The parent-death signal is sent when the thread that started the
	// child ends: keep this goroutine on its thread for good.
	goruntime.LockOSThread()
	if err := cmd.Start(); err != nil {
		r.Close()
		removeCrashFile()
		return 0, err
	}
	r.Close()
	got := forward(cmd.Process, sigs)
	cmd.Wait()
	sent := got()

	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		// Killed (SIGKILL by the crash fault, the OOM killer, kill -9):
		// end the same way, so that whoever started faultline sees what
		// happened, after saying so unless it was sent to this process.
		removeCrashFile()
		restoreTerminal(tty)
		if !wasSent(ws.Signal(), sent, sigs) {
			reportKilled(name, cmd.Process.Pid, ws.Signal())
		}
		signal.Reset(ws.Signal())
		syscall.Kill(os.Getpid(), ws.Signal())
		time.Sleep(time.Second)
		return 128 + int(ws.Signal()), nil
	}
	restoreTerminal(tty)
	switch code := ws.ExitStatus(); code {
	case ChildUsage:
		removeCrashFile()
		return CodeUsage, nil
	case CodeUsage:
		reportCrash(name, crashFile)
		return CodeCrash, nil
	default:
		removeCrashFile()
		return code, nil
	}
}

// forward passes the signals that arrive on sigs on to p until the
// returned function is called; that function returns the signals passed
// on.
func forward(p *os.Process, sigs <-chan os.Signal) func() map[os.Signal]bool {
	sent := map[os.Signal]bool{}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case s := <-sigs:
				sent[s] = true
				p.Signal(s)
			case <-done:
				return
			}
		}
	}()
	return func() map[os.Signal]bool {
		close(done)
		<-stopped
		return sent
	}
}

// sentGrace is how long the supervisor waits for its own copy of a signal
// that killed the child before it says the signal was sent to the child
// alone.
const sentGrace = 250 * time.Millisecond

// wasSent reports whether sig was sent to the supervisor: passed on already
// (in sent), or arriving on sigs now. A terminal's Ctrl-C or hang-up
// reaches the child and the supervisor at once, and the child may die of
// it before the supervisor's copy is delivered.
func wasSent(sig syscall.Signal, sent map[os.Signal]bool, sigs <-chan os.Signal) bool {
	if sent[sig] {
		return true
	}
	if !slices.Contains(forwarded(), os.Signal(sig)) {
		return false // never passed on (SIGKILL): the child's alone
	}
	deadline := time.After(sentGrace)
	for {
		select {
		case s := <-sigs:
			if s == sig {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

// reportKilled says in one line that the child, pid, was killed by sig
// that the supervisor was not sent, and what that leaves.
func reportKilled(name string, pid int, sig syscall.Signal) {
	sigName := unix.SignalName(sig)
	if sigName == "" {
		sigName = fmt.Sprintf("signal %d", int(sig))
	}
	fmt.Fprintf(os.Stderr, "%s: the %s process (pid %d) was killed by %s; the state dir is as a crash leaves it: the next `%s run --resume`, or the terminal UI, goes on from its last completed checkpoint\n",
		name, name, pid, sigName, name)
}

// restoreTerminal gives the terminal back as the supervisor found it when
// the child left it otherwise (the terminal UI's raw mode and alternate
// screen, after a crash or a kill).
func restoreTerminal(was *term.State) {
	if was == nil {
		return
	}
	now, err := term.GetState(os.Stdin.Fd())
	if err != nil || *now == *was {
		return
	}
	if term.IsTerminal(os.Stdout.Fd()) {
		fmt.Fprint(os.Stdout, "\x1b[?1049l\x1b[?25h")
	}
	term.Restore(os.Stdin.Fd(), was)
}

// reportCrash tells the user that faultline crashed, what the report's
// first line says, and where the whole report is.
func reportCrash(name, crashFile string) {
	first := ""
	if f, err := os.Open(crashFile); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" {
				first = line
				break
			}
		}
		f.Close()
	}
	if first == "" {
		os.Remove(crashFile)
		fmt.Fprintf(os.Stderr, "%s: crashed (exit code 2 without a report): this is a bug in %s, not a mistake in what you gave it; the state dir is as a crash leaves it, and the next run goes on from its last completed checkpoint\n", name, name)
		return
	}
	fmt.Fprintf(os.Stderr, "%s: crashed: %s\n%s: this is a bug in %s, not a mistake in what you gave it; the report is in %s (please send it with the state dir's faultline.log); the state dir is as a crash leaves it, and the next run goes on from its last completed checkpoint\n",
		name, first, name, name, crashFile)
}
