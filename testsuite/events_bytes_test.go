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

// Acceptance (#39, 4): a run whose events add up to more than 2 MB — 40
// steps failing with 60 KB messages — is shown whole: `events` pages
// through all 40 failures, and `run` prints all 40 as they come.
func TestEventsPageBySize(t *testing.T) {
	parallel(t, alone("cpu"))
	dir := t.TempDir()
	// Each step fails with its own 60 KB message (PLAYBOOK_ERROR_FILE).
	script := filepath.Join(dir, "fail.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\nprintf '{\"message\": \"%s\"}' \"$(head -c 61440 /dev/zero | tr '\\0' x)\" > \"$PLAYBOOK_ERROR_FILE\"\nexit 1\n"), 0o755))
	var steps strings.Builder
	for i := range 40 {
		fmt.Fprintf(&steps, "  - step: s%02d\n    tool: {kind: shell, command: %s}\n", i, script)
	}
	file := writePlaybook(t, dir, "big_errors.yaml", "metadata: {name: big-errors}\nfailure_mode: continue\nworkflow:\n"+steps.String())
	id := fmt.Sprintf("big-errors-%d", time.Now().UnixNano())
	code, runOut, errOut := cli(t, "run", "--address", server.Address, "--id", id, file)
	require.Equal(t, 1, code, errOut)
	code, out, errOut := cli(t, "events", "--address", server.Address, id)
	require.Equal(t, 0, code, errOut)
	require.Greater(t, len(out), 2<<20, "the events are over 2 MB")
	require.Equal(t, 40, strings.Count(out, "step_failed"), errOut)
	for i := range 40 {
		require.Regexp(t, fmt.Sprintf(`(?m)^\S+\s+s%02d\s+failed`, i), runOut, "run prints the failure of s%02d", i)
	}
}
