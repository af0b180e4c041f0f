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
// run and step directories last written before now minus retention, then
// the directories they left empty that were as old (a step may have just
// made its directory); it returns how many files it removed. It leaves
// other files alone, and a step directory whose attempt is running in this
// process (which may have printed nothing for longer than the retention).
func RemoveOldLogs(logDir string, retention time.Duration, now time.Time) int {
	cutoff := now.Add(-retention)
	removed := 0
	runs, _ := os.ReadDir(logDir)
	for _, run := range runs {
		if !run.IsDir() {
			continue
		}
		runDir, runOld := filepath.Join(logDir, run.Name()), olderThan(run, cutoff)
		steps, _ := os.ReadDir(runDir)
		for _, step := range steps {
			if !step.IsDir() {
				continue
			}
			stepDir, stepOld := filepath.Join(runDir, step.Name()), olderThan(step, cutoff)
			if activities.LogDirInUse(stepDir) {
				continue
			}
			files, _ := os.ReadDir(stepDir)
			for _, f := range files {
				if !strings.HasPrefix(f.Name(), "attempt-") {
					continue
				}
				if info, err := f.Info(); err == nil && info.Mode().IsRegular() && info.ModTime().Before(cutoff) {
					if os.Remove(filepath.Join(stepDir, f.Name())) == nil {
						removed++
					}
				}
			}
			if stepOld {
				_ = os.Remove(stepDir) // fails unless empty
			}
		}
		if runOld {
			_ = os.Remove(runDir)
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
