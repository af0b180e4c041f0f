package activities

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"playbook/contract"

	"github.com/stretchr/testify/require"
)

// fullDisk mounts a small tmpfs and fills it, for a log directory with no
// room left; it needs root (and skips without it).
func fullDisk(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a full tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	f, err := os.Create(filepath.Join(dir, "filler"))
	require.NoError(t, err)
	for err == nil {
		_, err = f.Write(make([]byte, 4096))
	}
	require.True(t, errors.Is(err, syscall.ENOSPC), "%v", err)
	require.NoError(t, f.Close())
	return dir
}

// An attempt that fails while the log disk has no room for its output
// fails as a tool_error naming the log directory, marked the worker's
// failure (not the step's exit code). One whose process exited 0 did its
// work: it completes, with its logs cut short.
func TestFullLogDiskIsTheWorkersFailure(t *testing.T) {
	a := &Activities{LogDir: fullDisk(t)}
	ok := a.runTool(context.Background(), shellInput(t, map[string]any{"command": "echo some output; echo more >&2"}), 1)
	require.Nil(t, ok.Err, "a process that succeeded did its work")
	o := a.runTool(context.Background(), shellInput(t, map[string]any{"command": "echo some output; echo more >&2; exit 1"}), 2)
	require.NotNil(t, o.Err)
	require.Equal(t, contract.ErrTool, o.Err.Type)
	require.True(t, isLogSpaceFailure(o.Err))
	require.Nil(t, o.ExitCode)
	require.True(t, strings.HasPrefix(o.Err.Message, "the worker's log directory "+a.LogDir+" is full (no space left on device)"), o.Err.Message)
}
