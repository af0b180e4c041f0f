package spec

import "path/filepath"

// SubPlaybookPath resolves a playbook step's path the way the run does:
// relative to the directory of the file that names it.
func SubPlaybookPath(baseDir, path string) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	return filepath.Join(baseDir, path)
}
