package commands

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
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
// drives the terminal. C1 controls (U+0080-U+009F) are escaped as \u00XX,
// and a byte that is no part of UTF-8 text as \xXX (a lone 0x9B is CSI to
// a terminal not reading UTF-8). A write that ends inside a character is
// held until the next.
type controlsEscaped struct {
	w    io.Writer
	held []byte // the start of a character the last write ended inside
}

func (e *controlsEscaped) Write(p []byte) (int, error) {
	in := p
	if len(e.held) > 0 {
		in = append(e.held, p...)
		e.held = nil
	}
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); {
		c := in[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '\n':
				out = append(out, c)
			case c < 0x20 || c == 0x7f:
				out = fmt.Appendf(out, `\x%02x`, c)
			default:
				out = append(out, c)
			}
			i++
			continue
		}
		if !utf8.FullRune(in[i:]) {
			e.held = bytes.Clone(in[i:])
			break
		}
		r, size := utf8.DecodeRune(in[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = fmt.Appendf(out, `\x%02x`, c)
		case r >= 0x80 && r <= 0x9f:
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, in[i:i+size]...)
		}
		i += size
	}
	if _, err := e.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// rawOutput are the commands whose output is not escaped: logs prints a
// step's output as the step wrote it, mcp speaks JSON-RPC, files get
// writes a stored file's bytes as they are.
var rawOutput = map[string]bool{"logs": true, "mcp": true, "get": true}
