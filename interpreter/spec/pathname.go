package spec

import (
	"fmt"
	"strings"
	"unicode"
)

// maxPathName is the longest run ID or step name accepted where it names a
// directory (most filesystems allow 255 bytes per name).
const maxPathName = 200

// CheckPathName checks a name that becomes one directory level under the
// worker's log directory (a run's workflow ID, a step name): it must not
// climb out of it or reach elsewhere. what says which name, for the error.
func CheckPathName(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s is empty", what)
	case name == "." || name == "..":
		return fmt.Errorf("%s %q would name a directory outside the log directory", what, name)
	case len(name) > maxPathName:
		return fmt.Errorf("%s is %d bytes long (the limit is %d)", what, len(name), maxPathName)
	}
	for _, r := range name {
		if r == '/' || r == '\\' {
			return fmt.Errorf("%s %q contains %q: it names a directory, so it cannot hold a path separator", what, name, r)
		}
		if r == 0 || unicode.IsControl(r) || r == unicode.ReplacementChar {
			return fmt.Errorf("%s %q contains a control character or invalid UTF-8", what, name)
		}
	}
	if strings.TrimSpace(name) != name {
		return fmt.Errorf("%s %q starts or ends with a space", what, name)
	}
	return nil
}

// MaxSubmittedName is the longest playbook or step name: each becomes a
// directory name of at most maxPathName bytes once a run's suffix or a loop
// element's index is added.
const MaxSubmittedName = maxPathName - 20
