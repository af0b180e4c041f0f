package testsuite

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
)

// Acceptance (#39, bounds): any Temporal client can signal a run, and a
// signal reaches the history before a worker sees it, so the run cannot
// refuse one; the server refuses one over its 2 MB blob limit. What the run
// can do it does: a signal whose payload does not decode (a number for the
// drain reason, a string for loop progress) is dropped without holding the
// run (the SDK's Receive would wait for the next one inside the run's
// loop), and a cancel reason over 256 KiB is kept as a line that says so.
func TestForeignSignalsNeitherStallNorSwellARun(t *testing.T) {
	parallel(t)
	ctx := context.Background()

	id := startGate(t, "")
	require.NoError(t, tc.SignalWorkflow(ctx, id, "", contract.SignalDrain, 42))
	require.NoError(t, tc.SignalWorkflow(ctx, id, "", contract.SignalLoopProgress, "not progress"))
	require.Len(t, approvalsOf(t, id), 1, "the run's queries answer")
	code, _, errOut := cli(t, "approve", "--address", server.Address, id, "sign_off", "--by", "alice", "--set", "ticket=T-1")
	require.Equal(t, 0, code, errOut)
	agg := finishID(t, id)
	require.Equal(t, contract.RunCompleted, agg.Status, "the undecodable drain was dropped, not taken as a drain")

	id = startGate(t, "")
	err := tc.SignalWorkflow(ctx, id, "", contract.SignalCancelReason, strings.Repeat("x", 3<<20))
	require.Error(t, err, "the server refuses a signal over its blob limit")
	require.NoError(t, tc.SignalWorkflow(ctx, id, "", contract.SignalCancelReason, strings.Repeat("x", 1<<20)))
	code, _, errOut = cli(t, "cancel", "--address", server.Address, id)
	require.Equal(t, 0, code, errOut)
	agg = finishID(t, id)
	require.Equal(t, contract.RunCancelled, agg.Status)
	marker := "(a reason of 1048576 bytes was sent, over the limit of 262144 (256 KiB) on what is sent to a run: it was not kept)"
	require.Equal(t, marker, agg.CancelReason)
	code, out, errOut := cli(t, "events", "--address", server.Address, id)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, marker)
	require.Less(t, len(out), 64<<10, "no event carries the megabyte")
}
