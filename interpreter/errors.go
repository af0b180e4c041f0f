package interpreter

import (
	"fmt"
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
