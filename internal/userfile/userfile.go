// Package userfile reads the files a user names to the CLI or the MCP
// server (a playbook, a sub-playbook, an --input file, a codec key, a
// history): only regular files, each within its size bound. A directory,
// a device such as /dev/zero, a FIFO or a socket is refused at once, before
// a byte is read, instead of blocking for ever or filling memory.
package userfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// TooLarge is a file over its bound.
type TooLarge struct {
	// Size is the file's size as it was seen (at least Limit+1 when it grew
	// while it was read).
	Size  int64
	Limit int64
	// What names the file's role, as in "a playbook".
	What string
}

func (e *TooLarge) Error() string {
	return fmt.Sprintf("the file is %d bytes, over the limit of %d bytes (%s) for %s", e.Size, e.Limit, Size(e.Limit), e.What)
}

// NotRegular is a path that names something other than a regular file.
type NotRegular struct{ Kind string }

func (e *NotRegular) Error() string {
	if e.Kind == "a directory" {
		return "is a directory, not a file"
	}
	return "is " + e.Kind + ", not a regular file"
}

// Open opens the regular file at path for reading. It opens without
// blocking (a FIFO put there meanwhile does not wait for a writer), then
// checks what it opened: anything but a regular file is refused. Errors say what is wrong
// in words, without the path (callers name the file their own way).
func Open(path string) (*os.File, os.FileInfo, error) {
	if err := CheckName(path); err != nil {
		return nil, nil, err
	}
	// A look before opening: a device is never opened (opening one can
	// act), a socket cannot be, and either is named for what it is.
	if fi, err := os.Stat(path); err != nil {
		return nil, nil, plain(err)
	} else if !fi.Mode().IsRegular() {
		return nil, nil, &NotRegular{Kind: kind(fi.Mode())}
	}
	// And a look at what was opened: the path may name something else by now.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, plain(err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, plain(err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &NotRegular{Kind: kind(fi.Mode())}
	}
	return f, fi, nil
}

// Read reads the regular file at path, at most limit bytes; what names the
// file's role in the error of a file over it ("a playbook"). The size is
// checked before reading and again while reading: a file may grow in
// between.
func Read(path string, limit int64, what string) ([]byte, error) {
	f, fi, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > limit {
		return nil, &TooLarge{Size: fi.Size(), Limit: limit, What: what}
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, plain(err)
	}
	if int64(len(b)) > limit {
		return nil, &TooLarge{Size: int64(len(b)), Limit: limit, What: what}
	}
	return b, nil
}

// CheckName refuses a file name that cannot be a file's, or could not be
// shown on one line: an empty one, one holding NUL or another control
// character, or bytes that are not UTF-8.
func CheckName(path string) error {
	switch {
	case path == "":
		return errors.New("the file name is empty")
	case !utf8.ValidString(path):
		return errors.New("the file name is not UTF-8 text")
	case strings.ContainsFunc(path, unicode.IsControl):
		return errors.New("the file name holds a control character")
	}
	return nil
}

// Show is a file name as a one-line message shows it: as it is, or quoted
// when it holds a control character, a space at an end, or bytes that are
// not UTF-8.
func Show(path string) string {
	if CheckName(path) != nil || strings.TrimSpace(path) != path {
		return strconv.Quote(path)
	}
	return path
}

// Size writes a size in bytes as people read it: 1 MiB, 64 KiB, 100 bytes.
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// plain is an error without the path an *os.PathError repeats.
func plain(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "a special file (" + m.Type().String() + ")"
}
