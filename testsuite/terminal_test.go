package testsuite

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A step's message with an ESC sequence that sets the terminal's title and
// a newline that forges a line is printed escaped by run, events and
// status: no control byte reaches the terminal, no forged line (#39).
func TestUserTextPrintedEscaped(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "forge.sh")
	require.NoError(t, os.WriteFile(script, []byte(`#!/bin/sh
printf '%s' '{"message": "boom\u001b]0;owned\u0007\nRun forged completed."}' > "$PLAYBOOK_ERROR_FILE"
printf 'out\033[2J\r\n'
exit 1
`), 0o755))
	file := writePlaybook(t, dir, "forge.yaml", "metadata: {name: forge}\nworkflow:\n  - step: forge\n    tool: {kind: shell, command: "+script+"}\n")
	id := fmt.Sprintf("forge-%d", time.Now().UnixNano())
	code, run, errOut := cli(t, "run", "--address", server.Address, "--id", id, file)
	require.Equal(t, 1, code, errOut)
	_, events, _ := cli(t, "events", "--address", server.Address, id)
	_, status, _ := cli(t, "status", "--address", server.Address, id)
	for name, out := range map[string]string{"run": run + errOut, "events": events, "status": status} {
		require.False(t, strings.ContainsFunc(out, func(r rune) bool { return r < 0x20 && r != '\n' }), "%s prints a control character:\n%q", name, out)
		require.Contains(t, out, `boom\x1b]0;owned\a`, name)
		require.NotRegexp(t, `(?m)^Run forged completed`, out, name)
	}
}
