package worker

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"playbook/activities"
)

// DefaultLogRetention is how long a worker keeps attempts' logs.
const DefaultLogRetention = 7 * 24 * time.Hour

// RemoveOldLogs removes the attempts' log files (attempt-*) under logDir's
// workflow, run and step directories (activities.StepLogDir, and the
// workflow and step directories of runs from before run directories) last
// written before now minus retention, then the directories they left empty
// that were as old (a step may have just made its directory); it returns
// how many files it removed. It leaves other files alone, and a step
// directory whose attempt is running in this process (which may have
// printed nothing for longer than the retention).
func RemoveOldLogs(logDir string, retention time.Duration, now time.Time) int {
	return removeOldIn(logDir, now.Add(-retention), 3)
}

// removeOldIn removes the old attempt-* files in dir and, depth levels
// down, in its subdirectories, and the old subdirectories left empty.
func removeOldIn(dir string, cutoff time.Time, depth int) int {
	if activities.LogDirInUse(dir) {
		return 0
	}
	removed := 0
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		switch {
		case e.IsDir() && depth > 0:
			// Its age before removing what it holds changes it.
			old := olderThan(e, cutoff)
			removed += removeOldIn(path, cutoff, depth-1)
			if old {
				_ = os.Remove(path) // fails unless empty
			}
		case strings.HasPrefix(e.Name(), "attempt-"):
			if info, err := e.Info(); err == nil && info.Mode().IsRegular() && info.ModTime().Before(cutoff) {
				if os.Remove(path) == nil {
					removed++
				}
			}
		}
	}
	return removed
}

// KeepLogs removes logs older than retention now and then again every
// while, until stop is called; retention 0 keeps them all.
func KeepLogs(logDir string, retention time.Duration) (stop func()) {
	if retention <= 0 {
		return func() {}
	}
	every := min(max(retention/2, 100*time.Millisecond), time.Hour)
	quit, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			RemoveOldLogs(logDir, retention, time.Now())
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(quit); <-exited }
}

// olderThan says whether e was last changed before cutoff (read before
// the sweep changes it).
func olderThan(e os.DirEntry, cutoff time.Time) bool {
	info, err := e.Info()
	return err == nil && info.ModTime().Before(cutoff)
}
