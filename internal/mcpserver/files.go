package mcpserver

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"playbook/internal/userfile"
	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/runs"
	"playbook/submit"
)

// What the MCP server reads from the disk of the machine it runs on: an
// agent, or whoever reaches its HTTP port, names the files. It reads
// playbooks only under its root (--root, default the working directory)
// and logs only under the log directory, each path with its symbolic links
// resolved first; never anything but a regular file within its bound.

// Root is a directory the MCP server may read under, its symbolic
// links resolved.
type Root struct {
	dir string
	// flag says how a user changes the directory, for messages.
	flag string
}

// NewRoot resolves dir (relative: to the working directory).
func NewRoot(dir, flag string) (Root, error) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return Root{}, fmt.Errorf("%s %s: %w", flag, userfile.Show(dir), errors.New(unwrapPathError(err)))
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return Root{}, fmt.Errorf("%s %s: not a directory", flag, userfile.Show(dir))
	}
	return Root{dir: abs, flag: flag}, nil
}

// abs is name as an absolute path: a relative name is under the root.
func (r Root) abs(name string) string {
	if filepath.IsAbs(name) {
		return filepath.Clean(name)
	}
	return filepath.Join(r.dir, name)
}

// resolve is the real path of abs when it is under the root: outside, by
// its name or through a symbolic link, it is refused without saying
// whether it exists.
func (r Root) resolve(abs string) (string, error) {
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

func (r Root) holds(path string) bool {
	rel, err := filepath.Rel(r.dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// readPlaybook is a LoadBundle reader for files under the root.
func (r Root) readPlaybook(abs string) ([]byte, error) {
	real, err := r.resolve(abs)
	if err != nil {
		return nil, err
	}
	return submit.ReadPlaybook(real)
}

// loadFile is `playbook validate` of a file under the root (a relative
// name: relative to the root); its sub-playbooks must be under it too.
func (r Root) loadFile(name string) (*spec.Playbook, error) {
	if err := userfile.CheckName(name); err != nil {
		return nil, &spec.Error{File: userfile.Show(name), Msg: "cannot read: " + err.Error()}
	}
	read := r.scriptsInside()
	b, err := submit.LoadBundleIn(r.dir, name, read.playbook)
	return read.verdict(b, err)
}

// scriptsWatch reads a bundle's files under the root and keeps them, so
// that the recovery scripts they name can be checked against the root
// too: validation looks for each one on disk, and would otherwise tell,
// by "does not exist" or by nothing, whether a file outside the root is
// there.
type scriptsWatch struct {
	root  Root
	files map[string][]byte // by absolute path, as read
	text  func(abs string) ([]byte, bool)
}

func (r Root) scriptsInside() *scriptsWatch {
	return &scriptsWatch{root: r, files: map[string][]byte{}, text: func(string) ([]byte, bool) { return nil, false }}
}

// playbook is a LoadBundle reader: readPlaybook, keeping what it read.
func (w *scriptsWatch) playbook(abs string) ([]byte, error) {
	b, ok := w.text(abs)
	if !ok {
		var err error
		if b, err = w.root.readPlaybook(abs); err != nil {
			return nil, err
		}
	}
	w.files[abs] = b
	return b, nil
}

// verdict is the bundle's playbook, or its errors, with every recovery
// script outside the root refused — without saying whether it exists —
// and validation's own word on such a script (it does or does not exist)
// left out.
func (w *scriptsWatch) verdict(b *submit.Bundle, err error) (*spec.Playbook, error) {
	var outside spec.Errors
	hidden := map[string]bool{} // "looked for PATH" of scripts outside
	for _, abs := range slices.Sorted(maps.Keys(w.files)) {
		pb, _ := spec.Decode(w.shown(abs), w.files[abs])
		if pb == nil {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(pb.Handlers)) {
			for _, rule := range pb.Handlers[name].Rules {
				fields := strings.Fields(rule.RecoveryScript)
				if len(fields) == 0 || !strings.Contains(fields[0], "/") {
					continue
				}
				path := fields[0]
				if !filepath.IsAbs(path) {
					path = filepath.Join(filepath.Dir(abs), path)
				}
				if !w.root.inside(filepath.Clean(path)) {
					hidden["(looked for "+path+")"] = true
					outside = append(outside, &spec.Error{File: w.shown(abs), Line: rule.RecoveryScriptLine,
						Msg: fmt.Sprintf("failure handler %q: recovery_script %s is outside the directory this MCP server reads, %s (%s)", name, fields[0], w.root.dir, w.root.flag)})
				}
			}
		}
	}
	if len(outside) == 0 {
		if err != nil {
			return nil, err
		}
		return b.Root, nil
	}
	var lines []string
	if err != nil {
		for _, line := range strings.Split(strings.TrimSpace(err.Error()), "\n") {
			if !hidden[line[strings.LastIndex(line, " (looked for ")+1:]] {
				lines = append(lines, line)
			}
		}
	}
	lines = append(lines, strings.Split(outside.Error(), "\n")...)
	return nil, errors.New(strings.Join(lines, "\n"))
}

// inside tells whether path is under the root, by its name and through
// its links, as far as it exists: a name that is not there is judged by
// its deepest ancestor that is.
func (r Root) inside(path string) bool {
	if !r.holds(path) {
		return false
	}
	for p := path; ; p = filepath.Dir(p) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return r.holds(real)
		}
		if filepath.Dir(p) == p {
			return false
		}
	}
}

// shown is a file's name as the errors show it: relative to the root.
func (w *scriptsWatch) shown(abs string) string {
	if rel, err := filepath.Rel(w.root.dir, abs); err == nil {
		return rel
	}
	return abs
}

// loadInput is load of a file under the root: the playbook and the
// workflow's input that freezes it, for retry_run's file.
func (r Root) loadInput(name string) (*spec.Playbook, contract.Input, error) {
	if err := userfile.CheckName(name); err != nil {
		return nil, contract.Input{}, &spec.Error{File: userfile.Show(name), Msg: "cannot read: " + err.Error()}
	}
	read := r.scriptsInside()
	b, err := submit.LoadBundleIn(r.dir, name, read.playbook)
	pb, err := read.verdict(b, err)
	if err != nil {
		return nil, contract.Input{}, err
	}
	return pb, runs.Frozen(name, b), nil
}

// loadText is `playbook validate` of a playbook given as text, shown as
// name, as if it were a file at the root: the sub-playbooks it runs are
// read under the root.
func (r Root) loadText(name, text string) (*spec.Playbook, error) {
	abs := r.abs(name)
	read := r.scriptsInside()
	read.text = func(path string) ([]byte, bool) { return []byte(text), path == abs }
	b, err := submit.LoadBundleIn(r.dir, name, read.playbook)
	return read.verdict(b, err)
}

// logRoot is the log directory, as a root: step_logs and the tails
// list_pending_failed shows read only under it.
func (t *tools) logRoot() Root {
	abs, err := filepath.Abs(t.LogDir)
	if err != nil {
		abs = t.LogDir
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return Root{dir: abs, flag: "--log-dir"}
}

// openLog opens a log file under the log directory: a regular file.
func (r Root) openLog(path string) (*os.File, os.FileInfo, error) {
	real, err := r.resolve(path)
	if err != nil {
		return nil, nil, err
	}
	return userfile.Open(real)
}

// readTail is the last max bytes of a log file under the log directory.
func (r Root) readTail(path string, max int64) ([]byte, error) {
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

func unwrapPathError(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}
