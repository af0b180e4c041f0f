package mcpserver

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/runs"
)

// A tool's error is one line an agent can act on, from runs' typed
// errors: a run not found says so, whatever the server's words; a run's
// refusal is its own first line; any other error is its message on one
// line.
func TestToolErrorsComeFromRunsTypedErrors(t *testing.T) {
	for err, want := range map[error]string{
		&runs.NotFoundError{Run: "r1", Err: errors.New("workflow not found for ID: r1")}:                          `run "r1": not found`,
		fmt.Errorf("status: %w", &runs.NotFoundError{Run: "r1", Err: errors.New("sql: no rows")}):                 `run "r1": not found`,
		&runs.RefusedError{Run: "r1", Err: errors.New("step \"b\" is not pending_failed\nits status: completed")}: `step "b" is not pending_failed`,
		&runs.EndedError{Run: "r1", Outcome: "completed", Nothing: "nothing to cancel"}:                           "r1 already ended: completed; nothing to cancel",
		&runs.InvalidError{Err: errors.New("two\nlines")}:                                                         "two; lines",
	} {
		require.EqualError(t, toolError("r1", err), want)
	}
}
