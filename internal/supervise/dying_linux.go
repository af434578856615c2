package supervise

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Dying reports whether pid is a supervised child whose supervisor is
// gone: the kernel is killing it (see Main), and what it holds, such as a
// state dir's lock, is about to be released.
func Dying(pid int) bool {
	if pid <= 0 {
		return false
	}
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	switch {
	case err != nil && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)), err == nil && len(env) == 0:
		return true // gone, or exiting: its memory is released already
	case err != nil || !bytes.Contains(env, []byte(envChild+"=")):
		return false
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return true // gone already
	}
	ppid := 0
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			ppid, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if ppid <= 1 {
		return true
	}
	// Handed to a subreaper: its supervisor was the same program.
	self, err1 := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	parent, err2 := os.Readlink(fmt.Sprintf("/proc/%d/exe", ppid))
	return err1 == nil && (err2 != nil || parent != self)
}
