package interpreter

import (
	"fmt"
	"sort"
	"strings"
)

// Error is a problem with a playbook found before anything runs. Its text is
// one line: `file:line: step "name": what is wrong`.
type Error struct {
	File string
	Line int
	Step string // empty when the problem is outside any step
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Step != "" {
		fmt.Fprintf(&b, "step %q: ", e.Step)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors are every problem found in a file, in file order; each is one
// line, so the whole text is one line per problem.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// add appends err, flattening lists; any other error becomes an *Error of
// the file without a line.
func (es Errors) Add(file string, err error) Errors {
	switch e := err.(type) {
	case nil:
		return es
	case *Error:
		return append(es, e)
	case Errors:
		return append(es, e...)
	}
	return append(es, &Error{File: file, Msg: err.Error()})
}

// err returns the list in file order as an error, nil when it is empty, and
// the *Error itself when there is one (so callers that look at it still can).
func (es Errors) Err() error {
	switch len(es) {
	case 0:
		return nil
	case 1:
		return es[0]
	}
	// In file order: by file, as they first appear (a playbook, then the
	// sub-playbooks it names), then by line.
	files := map[string]int{}
	for _, e := range es {
		if _, ok := files[e.File]; !ok {
			files[e.File] = len(files)
		}
	}
	sort.SliceStable(es, func(i, j int) bool {
		if fi, fj := files[es[i].File], files[es[j].File]; fi != fj {
			return fi < fj
		}
		return es[i].Line < es[j].Line
	})
	// One mistake found twice is one line.
	seen := map[string]bool{}
	out := es[:0]
	for _, e := range es {
		if text := e.Error(); !seen[text] {
			seen[text] = true
			out = append(out, e)
		}
	}
	if len(out) == 1 {
		return out[0]
	}
	return out
}
