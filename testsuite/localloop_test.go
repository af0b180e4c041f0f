package testsuite

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
)

// A loop's driver whose local elements keep its workflow task open past
// the task's heartbeat (8 s) closes in a task that no progress signal of
// its own disturbs: the server refuses none of its tasks for an event
// that arrived meanwhile (UnhandledCommand), which would throw away the
// local elements the task ran and run them again; so each runs once.
func TestLocalLoopDriverClosesCleanly(t *testing.T) {
	parallel(t, alone("cpu"))
	queue := ownQueueWorker(t, "local-loop-closes")
	ran := filepath.Join(t.TempDir(), "ran")
	agg := endsWithin(t, 3*time.Minute, `metadata: {name: local-loop-closes}
local: true
workflow:
  - step: each
    loop: { in: "1..600", mode: parallel, max_in_flight: 10 }
    tool: { kind: shell, command: 'sleep 0.15; echo "$I" >> "$RAN"', env: { I: "{{ item }}", RAN: "`+ran+`" } }
`, "--task-queue", queue)
	require.Equal(t, "completed", agg.Status)
	driver := agg.WorkflowID + ".each.loop"
	var refused, lost int
	for _, e := range history(t, driver, "").GetEvents() {
		if a := e.GetWorkflowTaskFailedEventAttributes(); a != nil && a.GetCause() == enums.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND {
			refused++
		}
		if e.GetWorkflowTaskFailedEventAttributes() != nil || e.GetWorkflowTaskTimedOutEventAttributes() != nil {
			lost++
		}
	}
	require.Zero(t, refused, "tasks of the driver refused for an event that arrived while they ran")
	runs := strings.Fields(readFile(ran))
	t.Logf("%d runs of 600 elements; tasks failed or timed out: %d", len(runs), lost)
	require.Len(t, slices.Compact(slices.Sorted(slices.Values(runs))), 600, "every element ran")
	if lost == 0 {
		// A task that timed out (a starved worker) loses its elements too.
		require.Len(t, runs, 600, "each element ran once")
	}
	require.True(t, hasMarker(t, driver, "loop-reports-delivered"))
	replay(t, "change_loop_reports_delivered", driver, "")
}
