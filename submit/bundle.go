package submit

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"playbook/internal/userfile"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
)

// Bundle is a playbook with every sub-playbook it includes, read once at
// submission and frozen into the run: editing a file later changes no run.
type Bundle struct {
	Root *spec.Playbook
	// RootPath is the root file's absolute path, a key of Files.
	RootPath string
	// Files maps each file's absolute path to its text.
	Files map[string]string
}

// MaxPlaybookSize bounds one playbook file: the whole tree is frozen into
// the run's input, which must fit in Temporal's payload limit (2 MB).
const MaxPlaybookSize = 1 << 20

// ReadPlaybook reads a playbook file for LoadBundle: a regular file of at
// most MaxPlaybookSize bytes; a directory, a device, a FIFO or a socket is
// refused without waiting or reading.
func ReadPlaybook(abs string) ([]byte, error) {
	return userfile.Read(abs, MaxPlaybookSize, "a playbook")
}

// LoadBundle reads, parses and validates a playbook and, recursively, the
// sub-playbooks its steps run, with the checks of a submission
// (ParseStrict; a step's workload against the sub-playbook's
// declarations). A file that includes itself, directly or through others,
// is an error naming the cycle. Every mistake of every file is told, file
// by file in the order they are read. display is the root path as the
// user wrote it, for messages; read reads a file by absolute path.
func LoadBundle(display string, read func(abs string) ([]byte, error)) (*Bundle, error) {
	return LoadBundleIn("", display, read)
}

// LoadBundleIn is LoadBundle with a relative display path relative to dir
// ("": the working directory).
func LoadBundleIn(dir, display string, read func(abs string) ([]byte, error)) (*Bundle, error) {
	if err := userfile.CheckName(display); err != nil {
		return nil, &spec.Error{File: userfile.Show(display), Msg: "cannot read: " + err.Error()}
	}
	abs, err := filepath.Abs(filepath.Join(dir, display))
	if filepath.IsAbs(display) {
		abs = filepath.Clean(display)
	}
	if err != nil {
		return nil, &spec.Error{File: userfile.Show(display), Msg: err.Error()}
	}
	b := &Bundle{RootPath: abs, Files: map[string]string{}}
	// Each file's name as the user would write it (display, then its
	// sub-playbooks' paths joined to it), and as messages show it.
	written := map[string]string{abs: display}
	shown := map[string]string{abs: userfile.Show(display)}
	parsed := map[string]*spec.Playbook{}
	var order []string // the files' names as they are read
	var load func(abs string, stack []string) (*spec.Playbook, error)
	load = func(abs string, stack []string) (*spec.Playbook, error) {
		order = append(order, shown[abs])
		src, err := read(abs)
		var tooLarge *userfile.TooLarge
		switch {
		case errors.As(err, &tooLarge):
			return nil, &spec.Error{File: shown[abs], Msg: tooLarge.Error()}
		case err != nil:
			return nil, &unreadable{&spec.Error{File: shown[abs], Msg: "cannot read: " + err.Error()}}
		case len(src) > MaxPlaybookSize:
			return nil, &spec.Error{File: shown[abs], Msg: (&userfile.TooLarge{Size: int64(len(src)), Limit: MaxPlaybookSize, What: "a playbook"}).Error()}
		}
		// A file's own errors do not stop the sub-playbooks it names from
		// being read: one pass tells every mistake of the tree.
		pb, err := parseStrict(shown[abs], src, filepath.Dir(abs))
		if pb == nil {
			return nil, err
		}
		parsed[abs] = pb
		b.Files[abs] = string(src)
		errs := spec.Errors{}.Add(shown[abs], err)
		stack = append(stack, abs)
		for _, s := range pb.Steps {
			if s.Tool == nil || s.Tool.Kind != "playbook" {
				continue
			}
			rel := s.Tool.Spec["path"].(string)
			child := spec.SubPlaybookPath(filepath.Dir(abs), rel)
			if _, ok := shown[child]; !ok {
				written[child] = filepath.Join(filepath.Dir(written[abs]), rel)
				shown[child] = userfile.Show(written[child])
			}
			if i := slices.Index(stack, child); i >= 0 {
				var names []string
				for _, g := range append(stack[i:], child) {
					names = append(names, shown[g])
				}
				errs = errs.Add(shown[abs], &spec.Error{File: shown[abs], Line: s.Tool.Line, Step: s.Name,
					Msg: "sub-playbooks include each other: " + strings.Join(names, " -> ")})
				continue
			}
			if _, done := b.Files[child]; !done {
				sub, err := load(child, stack)
				if sub != nil {
					pb.Warnings = append(pb.Warnings, sub.Warnings...)
				}
				var cannot *unreadable
				if errors.As(err, &cannot) {
					// Said at the step that names the file.
					err = &spec.Error{File: shown[abs], Line: s.Tool.Line, Step: s.Name, Msg: fmt.Sprintf("sub-playbook %s: %s", userfile.Show(rel), cannot.err.Msg)}
				}
				errs = errs.Add(shown[abs], err)
			}
			if parsed[child] != nil {
				errs = errs.Add(shown[abs], checkChildWorkload(pb, s, parsed[child]))
			}
		}
		if len(errs) > 0 {
			return nil, errs
		}
		return pb, nil
	}
	root, err := load(abs, nil)
	var cannot *unreadable
	switch {
	case errors.As(err, &cannot):
		return nil, cannot.err
	case err != nil:
		return nil, spec.Errors{}.Add(shown[abs], err).InFileOrder(order)
	}
	b.Root = root
	return b, nil
}

// checkChildWorkload checks a playbook step's workload against the keys
// the sub-playbook declares; templated values are checked as templates.
func checkChildWorkload(parent *spec.Playbook, s *spec.Step, child *spec.Playbook) error {
	w, _ := s.Tool.Spec["workload"].(map[string]any)
	literal := map[string]any{}
	for k, v := range w {
		if str, ok := v.(string); ok && expr.IsTemplate(str) {
			if _, declared := child.Workload[k]; !declared {
				literal[k] = v // reported as undeclared below
			}
			continue
		}
		literal[k] = v
	}
	if _, err := CheckOverrides(child, literal); err != nil {
		return &spec.Error{File: parent.File, Line: s.Tool.Line, Step: s.Name, Msg: "workload: " + err.Error()}
	}
	return nil
}

// unreadable is a file that could not be read: the step that names it
// says so.
type unreadable struct{ err *spec.Error }

func (u *unreadable) Error() string { return u.err.Error() }
