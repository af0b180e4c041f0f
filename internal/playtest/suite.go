package playtest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Find lists the test files under paths: a test file itself, the test
// file beside a playbook (NAME.yaml's NAME.test.yaml), or every test file
// under a directory, in path order. No path: the working directory.
func Find(paths []string) ([]string, error) {
	if len(paths) == 0 {
		paths = []string{"."}
	}
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			if !strings.HasSuffix(p, Suffix) {
				beside := strings.TrimSuffix(strings.TrimSuffix(p, ".yaml"), ".yml") + Suffix
				if _, err := os.Stat(beside); err != nil {
					return nil, errors.New(p + ": no test file beside it (" + filepath.Base(beside) + ")")
				}
				p = beside
			}
			add(p)
			continue
		}
		var found []string
		// The separator makes a symbolic link to a directory walked too.
		walkRoot := strings.TrimSuffix(p, string(filepath.Separator)) + string(filepath.Separator)
		err = filepath.WalkDir(walkRoot, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && path != walkRoot && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(path, Suffix) {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(found)
		for _, f := range found {
			add(f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no test files (NAME%s) under %s", Suffix, strings.Join(paths, ", "))
	}
	return out, nil
}

// Report is what a test command found: results per case, or the
// malformed files' mistakes (then no case ran).
type Report struct {
	Results   []Result `json:"results"`
	Malformed []string `json:"malformed,omitempty"`
	Passed    int      `json:"passed"`
	Failed    int      `json:"failed"`
}

// Run loads every test file under paths and, when none is malformed, runs
// the cases opts pick; each is told to progress as it ends.
func Run(paths []string, opts Options, progress func(Result)) (*Report, error) {
	files, err := Find(paths)
	if err != nil {
		return nil, err
	}
	rep := &Report{}
	var suites []*Suite
	for _, f := range files {
		s, err := LoadWith(f, opts)
		var bad *MalformedError
		switch {
		case errors.As(err, &bad):
			rep.Malformed = append(rep.Malformed, bad.Lines...)
			continue
		case err != nil:
			return nil, err
		}
		suites = append(suites, s)
	}
	if len(rep.Malformed) > 0 {
		return rep, nil
	}
	for _, s := range suites {
		for _, c := range s.Cases(opts) {
			r := s.RunCase(c, opts)
			if r.Passed {
				rep.Passed++
			} else {
				rep.Failed++
			}
			rep.Results = append(rep.Results, r)
			if progress != nil {
				progress(r)
			}
		}
	}
	return rep, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
