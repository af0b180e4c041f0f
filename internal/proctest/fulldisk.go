package proctest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// FullDisk mounts a small tmpfs and fills it, for a directory with no room
// left (a worker's log directory on a full disk); it needs root and skips
// the test without it, or where no tmpfs can be mounted.
func FullDisk(t *testing.T) string {
	t.Helper()
	dir := Tmpfs(t, "size=64k")
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = f.Write(make([]byte, 4096))
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling the tmpfs: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Tmpfs mounts a tmpfs with the mount options given (size=64k,
// nr_inodes=4...) on a temporary directory, unmounted when the test ends;
// it needs root and skips the test without it, or where no tmpfs can be
// mounted.
func Tmpfs(t *testing.T, options string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", options, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	return dir
}
