package testsuite

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
)

// cancelledAsItFails is a loop whose element 0 fails at once while element
// 1 runs on (failure_mode stop cancels nothing), in a playbook that waits
// for a classification of a failure no rule handles.
const cancelledAsItFails = `metadata: {name: cancelled-as-it-fails}
use_pending_failed: true
workflow:
  - step: each
    loop: {in: [0, 1], mode: parallel}
    tool: {kind: shell, env: {I: "{{ item }}"}, command: 'if [ "$I" = 0 ]; then exit 3; fi; sleep 60'}
`

// A run cancelled while a step has already failed (a loop's element) but
// not yet ended: the step fails at once when it ends, rather than wait
// for a classification nobody is to give, and the run ends cancelled.
// (Before, it waited in pending_failed, and the cancelled run stayed open
// until someone classified the step.)
func TestACancelledRunDoesNotWaitForAClassification(t *testing.T) {
	parallel(t)
	file := writePlaybook(t, t.TempDir(), "p.yaml", cancelledAsItFails)
	run := start(t, file, contract.TaskQueue, nil)
	waitFor(t, "element 0 failed while element 1 runs", func() bool {
		agg, err := queryState(run.GetID())
		return err == nil && agg.Steps["each"].Loop != nil && agg.Steps["each"].Loop.Failed == 1
	})
	require.NoError(t, tc.CancelWorkflow(context.Background(), run.GetID(), run.GetRunID()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := run.Get(ctx, nil)
	require.Error(t, err)
	require.NoError(t, ctx.Err(), "the cancelled run ended")
	agg := finish(t, run)
	require.Equal(t, contract.RunCancelled, agg.Status)
	require.Equal(t, contract.StatusFailed, agg.Steps["each"].Status)
	require.Equal(t, "exit_code", agg.Steps["each"].Error.Type)
	require.True(t, hasMarker(t, run.GetID(), "cancelled-fails-at-once"))
	replay(t, "change_cancelled_fails_at_once", run.GetID(), run.GetRunID())
}
