package activities

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"playbook/internal/proctest"
	"playbook/interpreter/contract"

	"github.com/stretchr/testify/require"
)

// An attempt that fails while the log disk has no room for its output
// fails as a tool_error naming the log directory, marked the worker's
// failure (not the step's exit code). One whose process exited 0 did its
// work: it completes, with its logs cut short.
func TestFullLogDiskIsTheWorkersFailure(t *testing.T) {
	a := &Activities{LogDir: proctest.FullDisk(t)}
	ok := a.runTool(context.Background(), shellInput(t, map[string]any{"command": "echo some output; echo more >&2"}), 1)
	require.Nil(t, ok.Err, "a process that succeeded did its work")
	o := a.runTool(context.Background(), shellInput(t, map[string]any{"command": "echo some output; echo more >&2; exit 1"}), 2)
	require.NotNil(t, o.Err)
	require.Equal(t, contract.ErrTool, o.Err.Type)
	require.True(t, isLogSpaceFailure(o.Err))
	require.Nil(t, o.ExitCode)
	require.True(t, strings.HasPrefix(o.Err.Message, "the worker's log directory "+a.LogDir+" is full (no space left on device)"), o.Err.Message)
}

// An attempt creates its log files once its process has started. A log
// disk with room for the step's directory and its stdout, but not for its
// stderr, finds the process started: one that exited 0 did its work and
// completes, its stdout kept; one that failed is the worker's failure, as
// when a write finds the disk full.
func TestLogFileWithoutRoomAfterTheStart(t *testing.T) {
	for _, tc := range []struct {
		command string
		failed  bool
	}{
		{"echo out; echo err >&2; touch \"$MARK\"", false},
		{"echo out; echo err >&2; touch \"$MARK\"; exit 1", true},
	} {
		a := &Activities{LogDir: proctest.Tmpfs(t, "size=1m,nr_inodes=4")} // the root, wf-1, s and one file
		mark := filepath.Join(t.TempDir(), "ran")
		o := a.runTool(context.Background(), shellInput(t, map[string]any{"command": tc.command, "env": map[string]any{"MARK": mark}}), 1)
		require.FileExists(t, mark, "the process ran")
		out, err := os.ReadFile(filepath.Join(a.LogDir, "wf-1", "s", "attempt-1.stdout"))
		require.NoError(t, err)
		require.Equal(t, "out\n", string(out))
		require.NoFileExists(t, filepath.Join(a.LogDir, "wf-1", "s", "attempt-1.stderr"))
		if !tc.failed {
			require.Nil(t, o.Err, "a process that succeeded did its work")
			require.Equal(t, "", o.Result.(map[string]any)["stderr"])
			continue
		}
		require.NotNil(t, o.Err)
		require.True(t, isLogSpaceFailure(o.Err), o.Err.Message)
	}
}

// A log file that cannot be created for another reason (here a directory
// holds its name) leaves the attempt as its process made it: the exit
// code decides, the other stream is kept.
func TestLogFileThatCannotBeCreated(t *testing.T) {
	a := &Activities{LogDir: t.TempDir()}
	require.NoError(t, os.MkdirAll(filepath.Join(a.LogDir, "wf-1", "s", "attempt-1.stderr"), 0o700))
	o := a.runTool(context.Background(), shellInput(t, map[string]any{"command": "echo out; echo err >&2; exit 3"}), 1)
	require.NotNil(t, o.Err)
	require.Equal(t, contract.ErrExitCode, o.Err.Type)
	require.NotNil(t, o.ExitCode)
	require.Equal(t, 3, *o.ExitCode)
	out, err := os.ReadFile(filepath.Join(a.LogDir, "wf-1", "s", "attempt-1.stdout"))
	require.NoError(t, err)
	require.Equal(t, "out\n", string(out))
}

// A process that cannot start leaves its attempt's log files, empty, as
// one that ran and wrote nothing does.
func TestLogFilesOfAProcessThatCannotStart(t *testing.T) {
	a := &Activities{LogDir: t.TempDir()}
	o := a.runTool(context.Background(), shellInput(t, map[string]any{"command": "true", "workdir": "/no-such-directory"}), 1)
	require.NotNil(t, o.Err)
	require.Equal(t, "workdir /no-such-directory: no such file or directory", o.Err.Message)
	for _, f := range []string{"attempt-1.stdout", "attempt-1.stderr"} {
		info, err := os.Stat(filepath.Join(a.LogDir, "wf-1", "s", f))
		require.NoError(t, err)
		require.Zero(t, info.Size())
	}
}
