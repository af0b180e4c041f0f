// Package proctest holds what the end-to-end tests share: finding processes
// by their command line (no process of a step outlives the step), waiting
// for a condition, free ports.
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
