// Package proctest finds processes by their command line, for tests that
// check that no process of a step outlives the step.
package proctest

import (
	"os"
	"path/filepath"
	"strings"
)

// Matching lists the PIDs whose command line contains s.
func Matching(s string) []string {
	var pids []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && strings.Contains(string(cmdline), s) {
			pids = append(pids, filepath.Base(d))
		}
	}
	return pids
}
