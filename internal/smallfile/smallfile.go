// Package smallfile reads the small files a user names on the command
// line (a job spec, a tour): a regular file of bounded size. Anything else
// (a device such as /dev/zero, a named pipe, a folder, a file far larger
// than such a file ever is) is refused at once, in one line that names
// the file and says what it is, instead of being read for ever, waited on
// or read whole into memory.
package smallfile

import (
	"fmt"
	"io"
	"os"
)

// Read returns the content of the file at path. what names the kind of
// file in messages ("job spec", "tour"); max is the most bytes it may
// have.
func Read(path, what string, max int64) ([]byte, error) {
	// Look before opening: opening a named pipe waits for a writer.
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if err := check(path, what, max, fi); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	defer f.Close()
	// What was opened may not be what was looked at.
	if fi, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if err := check(path, what, max, fi); err != nil {
		return nil, err
	}
	// The file may grow after Stat: read one byte more than allowed.
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", what, path, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("read %s %s: more than the %d bytes a %s may have; is it the right file?", what, path, max, what)
	}
	return data, nil
}

// check refuses what Read must not read: anything but a regular file of
// at most max bytes.
func check(path, what string, max int64, fi os.FileInfo) error {
	switch {
	case fi.IsDir():
		return fmt.Errorf("read %s %s: is a folder; give the path of a .yaml file", what, path)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("read %s %s: not a regular file (%s); give the path of a .yaml file", what, path, Kind(fi.Mode()))
	case fi.Size() > max:
		return fmt.Errorf("read %s %s: %d bytes, more than the %d a %s may have; is it the right file?", what, path, fi.Size(), max, what)
	}
	return nil
}

// Kind names the kind of a file that is not a regular file, for
// messages: "a folder", "a named pipe", …
func Kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a file of mode " + m.String()
}
