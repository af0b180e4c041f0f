package worker

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func writeLog(t *testing.T, path string, age time.Duration) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte("x\n"), 0o600))
	when := time.Now().Add(-age)
	require.NoError(t, os.Chtimes(path, when, when))
	require.NoError(t, os.Chtimes(filepath.Dir(path), when, when))
	require.NoError(t, os.Chtimes(filepath.Dir(filepath.Dir(path)), when, when))
}

func TestRemoveOldLogs(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old-run", "s", "attempt-1.stdout")
	writeLog(t, old, 8*24*time.Hour)
	writeLog(t, filepath.Join(dir, "mixed-run", "s", "attempt-1.stdout"), 8*24*time.Hour)
	fresh := filepath.Join(dir, "mixed-run", "s", "attempt-2.stdout")
	writeLog(t, fresh, time.Hour)
	notOurs := filepath.Join(dir, "mixed-run", "s", "notes.txt")
	writeLog(t, notOurs, 8*24*time.Hour)

	require.Equal(t, 2, RemoveOldLogs(dir, DefaultLogRetention, time.Now()))
	require.FileExists(t, notOurs, "only attempts' logs are removed")
	require.NoDirExists(t, filepath.Join(dir, "old-run"), "a run with no logs left goes")
	require.FileExists(t, fresh)
	require.NoFileExists(t, filepath.Join(dir, "mixed-run", "s", "attempt-1.stdout"))
}

func TestKeepLogsCleansUpWithAShortRetention(t *testing.T) {
	dir := t.TempDir()
	first := filepath.Join(dir, "run-1", "s", "attempt-1.stdout")
	writeLog(t, first, 0)
	stop := KeepLogs(dir, 500*time.Millisecond)
	defer stop()
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(dir, "run-1"))
		return os.IsNotExist(err)
	}, 10*time.Second, 50*time.Millisecond, "logs older than the retention are removed, then their directories")
}
