package badgerstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// owner is the content of the OWNER file: who has the store open.
type owner struct {
	PID     int       `json:"pid"`
	Command string    `json:"command"`
	Since   time.Time `json:"since"`
}

// writeOwner records this process as the holder of dir.
func writeOwner(dir string) error {
	args := slices.Clone(os.Args)
	if len(args) > 0 {
		args[0] = filepath.Base(args[0])
	}
	b, err := json.Marshal(owner{PID: os.Getpid(), Command: strings.Join(args, " "), Since: time.Now().UTC()})
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ownerFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, ownerFile))
}

// isBadgerLockError tells Badger's "directory is locked" error.
func isBadgerLockError(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Cannot acquire directory lock") ||
		strings.Contains(msg, "Another process is using this Badger database")
}

// describeHolder names the process that holds dir, e.g.
// "faultline (pid 1234, `faultline run --headless`)", from the OWNER file,
// checked against the pid Badger writes into its LOCK file. Every writer
// writes LOCK; a reader (a read-only open) writes neither file, so when LOCK
// is missing or names a process that is gone (left by one that was killed),
// the holder is a reader.
func describeHolder(dir string) string {
	lockPID := 0
	if b, err := os.ReadFile(filepath.Join(dir, "LOCK")); err == nil {
		lockPID, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if lockPID <= 0 || !alive(lockPID) {
		return "another process (probably one reading it, such as `faultline checkpoints list`)"
	}
	var o owner
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err == nil && json.Unmarshal(b, &o) == nil && o.PID == lockPID {
		cmdline := o.Command
		if len(cmdline) > 200 {
			cmdline = cmdline[:200] + "…"
		}
		name, _, _ := strings.Cut(cmdline, " ")
		if name == "" {
			name = "a process"
		}
		return fmt.Sprintf("%s (pid %d, `%s`)", name, o.PID, cmdline)
	}
	return fmt.Sprintf("another process (pid %d)", lockPID)
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
