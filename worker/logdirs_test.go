package worker

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Retention sweeps the run directories too, and removes a run directory,
// then its workflow's, once their logs are gone.
func TestRemoveOldLogsOfRunDirectories(t *testing.T) {
	dir := t.TempDir()
	const oldRun, freshRun = "01a20c1c-ef20-77da-a5b6-ead2d4700128", "01a20c1d-0000-7000-8000-000000000001"
	writeLog(t, filepath.Join(dir, "wf", oldRun, "s", "attempt-1.stdout"), 8*24*time.Hour)
	fresh := filepath.Join(dir, "wf", freshRun, "s", "attempt-1.stdout")
	writeLog(t, fresh, time.Hour)
	writeLog(t, filepath.Join(dir, "gone", oldRun, "s", "attempt-1.stdout"), 8*24*time.Hour)
	for _, wf := range []string{"wf", "gone"} { // written when their runs were
		when := time.Now().Add(-8 * 24 * time.Hour)
		require.NoError(t, os.Chtimes(filepath.Join(dir, wf), when, when))
	}

	require.Equal(t, 2, RemoveOldLogs(dir, DefaultLogRetention, time.Now()))
	require.NoDirExists(t, filepath.Join(dir, "wf", oldRun))
	require.FileExists(t, fresh)
	require.NoDirExists(t, filepath.Join(dir, "gone"), "a workflow with no logs left goes")
}
