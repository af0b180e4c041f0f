package commands

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"playbook/internal/userfile"
	"playbook/interpreter/playbookwf"
	"playbook/interpreter/spec"
	"playbook/submit"
)

// What the MCP server reads from the disk of the machine it runs on: an
// agent, or whoever reaches its HTTP port, names the files. It reads
// playbooks only under its root (--root, default the working directory)
// and logs only under the log directory, each path with its symbolic links
// resolved first; never anything but a regular file within its bound.

// fileRoot is a directory the MCP server may read under, its symbolic
// links resolved.
type fileRoot struct {
	dir string
	// flag says how a user changes the directory, for messages.
	flag string
}

// newFileRoot resolves dir (relative: to the working directory).
func newFileRoot(dir, flag string) (fileRoot, error) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return fileRoot{}, fmt.Errorf("%s %s: %w", flag, userfile.Show(dir), errors.New(unwrapPathError(err)))
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return fileRoot{}, fmt.Errorf("%s %s: not a directory", flag, userfile.Show(dir))
	}
	return fileRoot{dir: abs, flag: flag}, nil
}

// abs is name as an absolute path: a relative name is under the root.
func (r fileRoot) abs(name string) string {
	if filepath.IsAbs(name) {
		return filepath.Clean(name)
	}
	return filepath.Join(r.dir, name)
}

// resolve is the real path of abs when it is under the root: outside, by
// its name or through a symbolic link, it is refused without saying
// whether it exists.
func (r fileRoot) resolve(abs string) (string, error) {
	if err := userfile.CheckName(abs); err != nil {
		return "", err
	}
	outside := fmt.Errorf("outside the directory this MCP server reads, %s (%s)", r.dir, r.flag)
	if !r.holds(filepath.Clean(abs)) {
		return "", outside
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", errors.New(unwrapPathError(err))
	}
	if !r.holds(real) {
		return "", outside
	}
	return real, nil
}

func (r fileRoot) holds(path string) bool {
	rel, err := filepath.Rel(r.dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// readPlaybook is a LoadBundle reader for files under the root.
func (r fileRoot) readPlaybook(abs string) ([]byte, error) {
	real, err := r.resolve(abs)
	if err != nil {
		return nil, err
	}
	return submit.ReadPlaybook(real)
}

// loadFile is `playbook validate` of a file under the root (a relative
// name: relative to the root); its sub-playbooks must be under it too.
func (r fileRoot) loadFile(name string) (*spec.Playbook, error) {
	if err := userfile.CheckName(name); err != nil {
		return nil, &spec.Error{File: userfile.Show(name), Msg: "cannot read: " + err.Error()}
	}
	b, err := submit.LoadBundleIn(r.dir, name, r.readPlaybook)
	if err != nil {
		return nil, err
	}
	return b.Root, nil
}

// loadInput is load of a file under the root: the playbook and the
// workflow's input that freezes it, for retry_run's file.
func (r fileRoot) loadInput(name string) (*spec.Playbook, playbookwf.Input, error) {
	if err := userfile.CheckName(name); err != nil {
		return nil, playbookwf.Input{}, &spec.Error{File: userfile.Show(name), Msg: "cannot read: " + err.Error()}
	}
	b, err := submit.LoadBundleIn(r.dir, name, r.readPlaybook)
	if err != nil {
		return nil, playbookwf.Input{}, err
	}
	return b.Root, frozen(name, b), nil
}

// loadText is `playbook validate` of a playbook given as text, shown as
// name, as if it were a file at the root: the sub-playbooks it runs are
// read under the root.
func (r fileRoot) loadText(name, text string) (*spec.Playbook, error) {
	abs := r.abs(name)
	b, err := submit.LoadBundleIn(r.dir, name, func(path string) ([]byte, error) {
		if path == abs {
			return []byte(text), nil
		}
		return r.readPlaybook(path)
	})
	if err != nil {
		return nil, err
	}
	return b.Root, nil
}

// logRoot is the log directory, as a root: step_logs and the tails
// list_pending_failed shows read only under it.
func (t *mcpTools) logRoot() fileRoot {
	abs, err := filepath.Abs(t.logDir)
	if err != nil {
		abs = t.logDir
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return fileRoot{dir: abs, flag: "--log-dir"}
}

// openLog opens a log file under the log directory: a regular file.
func (r fileRoot) openLog(path string) (*os.File, os.FileInfo, error) {
	real, err := r.resolve(path)
	if err != nil {
		return nil, nil, err
	}
	return userfile.Open(real)
}

// readTail is the last max bytes of a log file under the log directory.
func (r fileRoot) readTail(path string, max int64) ([]byte, error) {
	f, fi, err := r.openLog(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > max {
		if _, err := f.Seek(fi.Size()-max, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, max))
}
