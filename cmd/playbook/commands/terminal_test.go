package commands

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// A user's text drives no terminal: ESC, CR, BEL, DEL and C1 controls are
// printed escaped, a C1 control cut between two writes too; newlines end
// lines, except inside a field printed on one line.
func TestControlsEscaped(t *testing.T) {
	var out bytes.Buffer
	w := &controlsEscaped{w: &out}
	for _, piece := range []string{"a\x1b]0;title\x07 b\r\n", "c\x7f \xc2", "\x9b31m é\n"} {
		n, err := w.Write([]byte(piece))
		require.NoError(t, err)
		require.Equal(t, len(piece), n)
	}
	require.Equal(t, `a\x1b]0;title\x07 b\x0d`+"\n"+`c\x7f \u009b31m é`+"\n", out.String())
	require.Equal(t, `ok\nRun x completed\t\x1b[2J é`, oneLine("ok\nRun x completed\t\x1b[2J é"))
}

// A byte that is no part of UTF-8 text is escaped (a lone 0x9B is CSI to
// a terminal that does not read UTF-8); a character split between two
// writes is written whole.
func TestStrayBytesEscaped(t *testing.T) {
	var out bytes.Buffer
	w := &controlsEscaped{w: &out}
	for _, piece := range []string{"a\x9b31m \xe2\x82", "\xac \xff\n"} {
		n, err := w.Write([]byte(piece))
		require.NoError(t, err)
		require.Equal(t, len(piece), n)
	}
	require.Equal(t, `a\x9b31m € \xff`+"\n", out.String())
}
