package activities

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Two runs with the same workflow ID keep their attempts' logs apart, and
// RunLogDir finds the latest (or the one asked for).
func TestRunsOfOneWorkflowIDKeepTheirLogs(t *testing.T) {
	a := &Activities{LogDir: t.TempDir()}
	const first, second = "01a20c1c-ef20-77da-a5b6-ead2d4700128", "01a20c1d-0000-7000-8000-000000000001"
	for _, run := range []string{first, second} {
		in := shellInput(t, map[string]any{"command": `echo "$PLAYBOOK_LOG_DIR"`})
		in.RunID = run
		o := a.runTool(context.Background(), in, 1)
		require.Nil(t, o.Err)
		require.Equal(t, filepath.Join(a.LogDir, "wf-1", run, "s")+"\n", o.Result.(map[string]any)["stdout"])
	}
	// The latest run is the one whose directory was written last, whatever
	// its ID: the times are set, not waited for.
	written := func(run string, ago time.Duration) {
		at := time.Now().Add(-ago)
		require.NoError(t, os.Chtimes(filepath.Join(a.LogDir, "wf-1", run), at, at))
	}
	written(first, time.Hour)
	written(second, time.Minute)
	for _, run := range []string{first, second} {
		b, err := os.ReadFile(filepath.Join(a.LogDir, "wf-1", run, "s", "attempt-1.stdout"))
		require.NoError(t, err)
		require.Equal(t, filepath.Join(a.LogDir, "wf-1", run, "s")+"\n", string(b))
	}
	require.Equal(t, filepath.Join(a.LogDir, "wf-1", second), RunLogDir(a.LogDir, "wf-1", ""))
	require.Equal(t, filepath.Join(a.LogDir, "wf-1", first), RunLogDir(a.LogDir, "wf-1", first))
	written(first, 0)
	require.Equal(t, filepath.Join(a.LogDir, "wf-1", first), RunLogDir(a.LogDir, "wf-1", ""), "the run written to last, not the greater ID")
	require.Equal(t, filepath.Join(a.LogDir, "wf-2"), RunLogDir(a.LogDir, "wf-2", ""), "a run from before run directories")
}
