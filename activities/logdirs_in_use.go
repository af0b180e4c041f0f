package activities

import (
	"path/filepath"
	"sync"
)

// logDirsInUse counts, by step log directory, the attempts of this process
// that are running, so that the log retention sweep never removes the logs
// of a running attempt (a step may print nothing for longer than the
// retention).
var logDirsInUse = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

// holdLogDir marks an attempt's log directory in use until release.
func holdLogDir(dir string) (release func()) {
	dir = filepath.Clean(dir)
	logDirsInUse.Lock()
	logDirsInUse.n[dir]++
	logDirsInUse.Unlock()
	return func() {
		logDirsInUse.Lock()
		defer logDirsInUse.Unlock()
		if logDirsInUse.n[dir]--; logDirsInUse.n[dir] <= 0 {
			delete(logDirsInUse.n, dir)
		}
	}
}

// LogDirInUse says whether an attempt of this process is running with its
// logs in dir.
func LogDirInUse(dir string) bool {
	logDirsInUse.Lock()
	defer logDirsInUse.Unlock()
	return logDirsInUse.n[filepath.Clean(dir)] > 0
}
