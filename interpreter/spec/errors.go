package spec

import (
	"fmt"
	"slices"
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
	// standalone: the mistake is in the one key it names (a next naming
	// no step), so it is told even in a step whose other keys did not
	// decode (Playbook.WithoutBroken).
	standalone bool
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

// Add appends err, flattening lists; any other error becomes an *Error of
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

// Err returns the list in file order as an error, nil when it is empty,
// and the *Error itself when there is one (so callers that look at it
// still can). Files come in the order they first appear in the list.
func (es Errors) Err() error { return es.InFileOrder(nil) }

// InFileOrder is Err with the files in the order given (a playbook, then
// the sub-playbooks it names, as they were read); a file not given comes
// after them, in the order it first appears. Within a file, errors are in
// line order, and one mistake found twice is one line. es is left as it is.
func (es Errors) InFileOrder(files []string) error {
	if len(es) == 0 {
		return nil
	}
	rank := map[string]int{}
	for _, f := range files {
		if _, ok := rank[f]; !ok {
			rank[f] = len(rank)
		}
	}
	for _, e := range es {
		if _, ok := rank[e.File]; !ok {
			rank[e.File] = len(rank)
		}
	}
	sorted := slices.Clone(es)
	sort.SliceStable(sorted, func(i, j int) bool {
		if fi, fj := rank[sorted[i].File], rank[sorted[j].File]; fi != fj {
			return fi < fj
		}
		return sorted[i].Line < sorted[j].Line
	})
	seen := map[string]bool{}
	out := sorted[:0]
	for _, e := range sorted {
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
