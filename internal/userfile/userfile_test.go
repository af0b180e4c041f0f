package userfile

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Anything but a regular file within its bound is refused at once, with
// one line that says what it is.
func TestReadRefusesWhatIsNotABoundedFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 2048), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	link := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		dir:                      "is a directory, not a file",
		"/dev/zero":              "is a character device, not a regular file",
		link:                     "is a character device, not a regular file",
		fifo:                     "is a named pipe (FIFO), not a regular file",
		sock:                     "is a socket, not a regular file",
		big:                      "the file is 2048 bytes, over the limit of 1024 bytes (1 KiB) for a test file",
		filepath.Join(dir, "no"): "no such file or directory",
		"a\x00b":                 "the file name holds a control character",
		"a\nb":                   "the file name holds a control character",
		"":                       "the file name is empty",
		"\xff":                   "the file name is not UTF-8 text",
	} {
		start := time.Now()
		_, err := Read(path, 1024, "a test file")
		if err == nil || err.Error() != want {
			t.Errorf("Read(%q) = %v, want %q", path, err, want)
		}
		if strings.Contains(err.Error(), "\n") || time.Since(start) > time.Second {
			t.Errorf("Read(%q): %q took %s", path, err, time.Since(start))
		}
	}
	b, err := Read(small, 5, "a test file")
	if err != nil || string(b) != "hello" {
		t.Errorf("Read(small) = %q, %v", b, err)
	}
}

func TestShowQuotesWhatWouldBreakALine(t *testing.T) {
	for in, want := range map[string]string{"a.yaml": "a.yaml", "a\nb": `"a\nb"`, "a\x00": `"a\x00"`, " a": `" a"`} {
		if got := Show(in); got != want {
			t.Errorf("Show(%q) = %s, want %s", in, got, want)
		}
	}
}
