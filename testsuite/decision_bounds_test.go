package testsuite

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"playbook/interpreter/contract"
)

// Acceptance (#39, 5): an approval decision of 3 MB, sent through the
// Update as any SDK client would and through MCP, is refused at once with
// a message that says why, and the run's queries keep answering; a name or
// reason with a control character (an ESC sequence, a newline) is refused
// by the CLI, MCP and the Update's validator alike. Nothing reaches the
// history, and the run is then approved as usual.
func TestOversizedAndForgedDecisionsRefused(t *testing.T) {
	parallel(t)
	id := startGate(t, "")
	ctx := context.Background()
	send := func(d map[string]any) error {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		h, err := tc.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: "approval", Args: []any{d}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err == nil {
			err = h.Get(ctx, nil)
		}
		return err
	}
	huge := strings.Repeat("x", 3<<20)
	began := time.Now()
	err := send(map[string]any{"step": "sign_off", "decision": "approve", "by": "alice", "reason": huge})
	require.ErrorContains(t, err, "the decision is 3145")
	require.ErrorContains(t, err, "bytes, over the limit of 262144 (256 KiB) on what is sent to a run: nothing was sent")
	// One just over the bound reaches the validator, which measures it.
	err = send(map[string]any{"step": "sign_off", "decision": "approve", "by": "alice", "reason": strings.Repeat("x", 300<<10)})
	require.ErrorContains(t, err, "the decision is 307265 bytes, over the limit of 262144 (256 KiB)")
	require.Less(t, time.Since(began), 10*time.Second, "refused at once")
	require.Len(t, approvalsOf(t, id), 1, "the run's queries answer")

	for _, c := range []struct {
		by, reason, want string
	}{
		{"alice\x1b]0;owned\x07", "r", `by holds a control character (\x1b at byte 5)`},
		{"alice", "ok\nRun gate completed", `the reason holds a control character (\n at byte 2)`},
		{"alice", "\u009b31m", `the reason holds a control character (\u009b at byte 0)`},
	} {
		err := send(map[string]any{"step": "sign_off", "decision": "approve", "by": c.by, "reason": c.reason})
		require.ErrorContains(t, err, c.want)
		code, out, errOut := cli(t, "approve", "--address", server.Address, id, "sign_off", "--by", c.by, "--reason", c.reason)
		require.Equal(t, 2, code, out)
		require.Contains(t, errOut, c.want)
	}

	s := mcpSession(t, "--allow-write", "--act-for", "alice")
	text, isErr := callTool(t, s, "approve_step", map[string]any{"run": id, "step": "sign_off", "reason": huge, "by": "alice"})
	require.True(t, isErr)
	require.Contains(t, text, "over the limit of 262144 (256 KiB)")
	text, isErr = callTool(t, s, "reject_step", map[string]any{"run": id, "step": "sign_off", "reason": "no\x1b[2J"})
	require.True(t, isErr)
	require.Contains(t, text, `the reason holds a control character (\x1b at byte 2)`)
	code, _, errOut := cli(t, "mcp", "--address", server.Address, "--act-for", "eve\x1b[31m")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `--act-for "eve\x1b[31m": give the name of a person`)

	require.Len(t, approvalsOf(t, id), 1, "the run still waits")
	code, _, errOut = cli(t, "approve", "--address", server.Address, id, "sign_off", "--by", "alice", "--set", "ticket=T-1")
	require.Equal(t, 0, code, errOut)
	agg := finishID(t, id)
	require.Equal(t, contract.RunCompleted, agg.Status)
	require.Equal(t, 1, countEvents(t, id, agg.RunID, enums.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED), "the refused decisions left nothing in the history")
}
