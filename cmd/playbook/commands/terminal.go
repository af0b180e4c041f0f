package commands

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
)

// What the CLI prints comes in part from users: step names, messages,
// reasons, who decided, what a process wrote. A control character in it
// (ESC starting a sequence that sets the terminal's title or moves the
// cursor, a carriage return or newline forging a line) is printed escaped,
// as Go writes it in a quoted string: \x1b, \r, \n, \u009b.

// oneLine is s with every control character escaped, newlines and tabs
// included: a field printed on one line.
func oneLine(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// controlsEscaped writes to w with every control character escaped but
// the newlines that end lines: whatever a command prints, no byte of it
// drives the terminal. (C1 controls are two bytes in UTF-8, 0xC2 then
// 0x80-0x9F; a write ending between them is held until the next.)
type controlsEscaped struct {
	w    io.Writer
	held bool // the last write ended with 0xC2
}

func (e *controlsEscaped) Write(p []byte) (int, error) {
	in := p
	if e.held {
		in = append([]byte{0xC2}, p...)
		e.held = false
	}
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); i++ {
		c := in[i]
		switch {
		case c == '\n':
			out = append(out, c)
		case c < 0x20 || c == 0x7f:
			out = fmt.Appendf(out, `\x%02x`, c)
		case c == 0xC2 && i+1 == len(in):
			e.held = true
		case c == 0xC2 && in[i+1] >= 0x80 && in[i+1] <= 0x9F:
			out = fmt.Appendf(out, `\u%04x`, rune(in[i+1]))
			i++
		default:
			out = append(out, c)
		}
	}
	if _, err := e.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// rawOutput are the commands whose output is not escaped: logs prints a
// step's output as the step wrote it, mcp speaks JSON-RPC.
var rawOutput = map[string]bool{"logs": true, "mcp": true}
