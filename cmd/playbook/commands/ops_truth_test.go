package commands

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A file that holds no history is refused as such (exit 2), not replayed
// into "diverges at replay failed".
func TestReplayRefusesWhatIsNotAHistory(t *testing.T) {
	dir := t.TempDir()
	empty, noEvents := filepath.Join(dir, "empty.json"), filepath.Join(dir, "none.json")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	require.NoError(t, os.WriteFile(noEvents, []byte("{}\n"), 0o644))
	code, out, errOut := cli(t, "replay", empty)
	require.Equal(t, 2, code, out+errOut)
	require.Equal(t, "replay: "+empty+": not a history: the file is empty (save a history with `playbook history RUN -o FILE.json`)\n", errOut)
	code, out, errOut = cli(t, "replay", noEvents)
	require.Equal(t, 2, code, out+errOut)
	require.Equal(t, "replay: "+noEvents+": not a history: it holds no events (save one with `playbook history RUN -o FILE.json`)\n", errOut)
}

// An unknown flag is one line and a hint, exit 2, whatever the command.
func TestUnknownFlagIsOneLine(t *testing.T) {
	for _, args := range [][]string{{"--bogus"}, {"run", "--bogus", hello}, {"status", "x", "--bogus"}, {"schedule", "create", "--bogus"}, {"dev", "--bogus"}} {
		code, out, errOut := cli(t, args...)
		require.Equal(t, 2, code, args)
		require.Empty(t, out, args)
		require.Regexp(t, "^[a-z ]+: unknown flag: --bogus \\(see `playbook[a-z ]*--help`\\)\n$", errOut, args)
	}
}

// The MCP server with Temporal out of reach exits 4, as every command does.
func TestMCPWithoutTemporalExits4(t *testing.T) {
	code, out, errOut := cli(t, "mcp", "--address", nowhere)
	require.Equal(t, 4, code, out+errOut)
	require.Regexp(t, "^mcp: cannot reach Temporal at "+nowhere+": ", errOut)
}

// worker --log-level takes debug, info, warn or error; dev's the same.
func TestLogLevelWords(t *testing.T) {
	for _, cmd := range []string{"worker", "dev"} {
		code, _, errOut := cli(t, cmd, "--log-level", "verbose")
		require.Equal(t, 2, code, errOut)
		require.Equal(t, cmd+": --log-level \"verbose\": give debug, info, warn or error\n", errOut)
	}
}

// A retry's attempt is named beside the step's own attempts, and one past
// them (a lost attempt retried beyond them) says why rather than reading
// "attempt 2 of 1" (seen when a worker was killed during an upload).
func TestAttemptOf(t *testing.T) {
	for _, c := range []struct {
		attempt int32
		max     int
		want    string
	}{
		{2, 0, "attempt 2"},
		{2, 3, "attempt 2 of 3"},
		{3, 3, "attempt 3 of 3"},
		{2, 1, "attempt 2 (the step has 1; attempts lost with their worker are retried beyond them)"},
	} {
		require.Equal(t, c.want, attemptOf(c.attempt, c.max), "%d of %d", c.attempt, c.max)
	}
}
