package activities

import (
	"context"
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
