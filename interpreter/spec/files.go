package spec

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Files are the files a step hands on (`outputs: {files: [...]}`) and the
// files it takes (`inputs: {files: {...}, from: [...]}`), through the run's
// store. Paths are relative to the attempt's working directory.
type Files struct {
	// Outputs are the paths or globs of the files the step produces,
	// uploaded after a successful attempt.
	Outputs []string `json:"outputs,omitempty"`
	// Inputs map a path in the working directory to a template naming a
	// stored file ("{{ steps.extract.files['raw.json'] }}").
	Inputs map[string]string `json:"inputs,omitempty"`
	// From are steps all of whose files the step takes, each at its path.
	From []string `json:"from,omitempty"`
	// fromLines are the lines of From's names, for errors.
	fromLines []int
}

// Spec is the files' templates as a value, for what reads a step's
// templates the way it reads its tool's (compiling, rendering, reuse).
func (f *Files) Spec() map[string]any {
	if f == nil || len(f.Inputs) == 0 {
		return nil
	}
	in := map[string]any{}
	//workflowcheck:ignore order-free: fills a map by path
	for k, v := range f.Inputs {
		in[k] = v
	}
	return map[string]any{"files": in}
}

// FromLine is the line of From's i-th name.
func (f *Files) FromLine(i int) int { return f.fromLines[i] }

// outputKeys are the keys of `outputs`.
func (d *decoder) outputKeys(f *Files) keys {
	return keys{
		"files": {jsonSchema{"type": "array", "items": jsonSchema{"type": "string"}, "description": "Paths or globs, relative to the step's working directory, of the files uploaded to the run's store after a successful attempt."},
			func(v *yaml.Node) error {
				if v.Kind != yaml.SequenceNode {
					return d.errf(v, "outputs.files must be a list of paths or globs")
				}
				for _, it := range v.Content {
					var p string
					if err := d.str(it, "outputs.files", &p); err != nil {
						return err
					}
					if err := checkFilePath(p, true); err != nil {
						return d.errf(it, "outputs.files: %v", err)
					}
					f.Outputs = append(f.Outputs, p)
				}
				return nil
			}},
	}
}

// inputKeys are the keys of `inputs`.
func (d *decoder) inputKeys(f *Files) keys {
	return keys{
		"files": {jsonSchema{"type": "object", "additionalProperties": jsonSchema{"type": "string"}, "description": "A path in the step's working directory for each stored file it needs, named by a template such as \"{{ steps.extract.files['raw.json'] }}\"."},
			func(v *yaml.Node) error {
				if v.Kind != yaml.MappingNode {
					return d.errf(v, "inputs.files must be a mapping of a path to a stored file")
				}
				f.Inputs = map[string]string{}
				for i := 0; i+1 < len(v.Content); i += 2 {
					k, val := v.Content[i], v.Content[i+1]
					if err := checkFilePath(k.Value, false); err != nil {
						return d.errf(k, "inputs.files: %v", err)
					}
					var src string
					if err := d.str(val, "inputs.files."+k.Value, &src); err != nil {
						return err
					}
					if !strings.Contains(src, "{{") {
						return d.errf(val, "inputs.files.%s must name a stored file with a template, as \"{{ steps.extract.files['raw.json'] }}\"", k.Value)
					}
					f.Inputs[k.Value] = src
				}
				return nil
			}},
		"from": {sStepRefs("Steps all of whose files the step takes, each at the path it had."), func(v *yaml.Node) (err error) {
			f.From, err = d.names(v, "inputs.from", &f.fromLines)
			return err
		}},
	}
}

// checkFilePath refuses a path that could leave the working directory:
// absolute, or with a ".." segment; glob says whether it may be a glob.
func checkFilePath(p string, glob bool) error {
	switch {
	case p == "":
		return fmt.Errorf("an empty path")
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q is absolute: files are relative to the step's working directory", p)
	case strings.ContainsAny(p, "\\\x00"):
		return fmt.Errorf("%q holds a backslash or a NUL", p)
	case slices.Contains(strings.Split(p, "/"), ".."):
		return fmt.Errorf("%q leaves the step's working directory", p)
	}
	if glob {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("%q is not a valid glob: %v", p, err)
		}
	} else if strings.ContainsAny(p, "*?[") {
		return fmt.Errorf("%q: an input's path is a file's, not a glob", p)
	}
	return nil
}

// stepFiles returns the step's Files, made on first use.
func (s *Step) stepFiles() *Files {
	if s.Files == nil {
		s.Files = &Files{}
	}
	return s.Files
}

// checkFiles checks a step's files once its keys are read: they need a
// process to make and read them.
func (d *decoder) checkFiles(s *Step, n *yaml.Node) error {
	if s.Files == nil {
		return nil
	}
	if s.Tool == nil || !RunsProcess(s.Tool.Kind) {
		return d.errf(n, "outputs and inputs need a shell or python tool: files are made and read in a process's working directory")
	}
	if s.Loop != nil && len(s.Files.Inputs) > 0 {
		return d.errf(n, "a loop's elements take stored files with inputs.from, not inputs.files")
	}
	return nil
}

// CheckFilePath is the check of a file's path a step hands on or takes, as
// a playbook gives it literally (no glob): relative, within the working
// directory.
func CheckFilePath(p string) error { return checkFilePath(p, false) }
