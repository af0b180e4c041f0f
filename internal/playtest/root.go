package playtest

import (
	"os"
	"path/filepath"
	"strings"
)

// OutsideError refuses a file outside the directory a run of tests may
// read (Options.Root), saying nothing of whether the file is there.
type OutsideError struct{ Root string }

func (e *OutsideError) Error() string {
	return "outside " + e.Root + ", the directory these tests may read"
}

// Under checks that path is under root, by its name and by its real path
// (symbolic links resolved). A path outside is refused with the same
// *OutsideError whether or not it exists; only a path under root may be
// said not to exist.
func Under(root, path string) error {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	outside := &OutsideError{Root: root}
	if !holds(realRoot, abs) && !holds(root, abs) {
		return outside
	}
	real, err := filepath.EvalSymlinks(abs)
	if err == nil {
		if !holds(realRoot, real) {
			return outside
		}
		return nil
	}
	// Not there, or a link that leads nowhere: say so only when the
	// nearest directory that is there is under root, and the name is no
	// link (whose target, outside, would be the one missing).
	if info, lerr := os.Lstat(abs); lerr == nil && info.Mode()&os.ModeSymlink != 0 {
		return outside
	}
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		if realDir, derr := filepath.EvalSymlinks(dir); derr == nil {
			if !holds(realRoot, realDir) {
				return outside
			}
			return unwrap(err)
		}
		if dir == filepath.Dir(dir) {
			return outside
		}
	}
}

func holds(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// readable says why a test file's playbook cannot be read: outside root
// (when given), or not there.
func readable(path, root string) error {
	if root != "" {
		return Under(root, path)
	}
	_, err := os.Stat(path)
	return unwrap(err)
}

// readUnder is read refusing files outside root: a case's input file, a
// sub-playbook.
func readUnder(root string, read func(string) ([]byte, error)) func(string) ([]byte, error) {
	return func(abs string) ([]byte, error) {
		if err := Under(root, abs); err != nil {
			return nil, err
		}
		return read(abs)
	}
}
