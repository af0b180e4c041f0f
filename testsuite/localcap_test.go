package testsuite

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/proto"

	"playbook/interpreter/playbookwf"
)

// taskLoad is what one workflow task of a loop's driver completed with:
// the local elements whose markers it carried, and their encoded size.
type taskLoad struct{ markers, bytes int }

// driverRun is one run of a loop's driver: its run ID ("" for the last)
// and its history.
type driverRun struct {
	id string
	h  *historypb.History
}

// driverTasks reads a loop's driver, every run of it (it continues as
// new), oldest first: the load of each workflow task that completed, how
// many failed or timed out, and the runs.
func driverTasks(t *testing.T, driver string) (tasks []taskLoad, lost int, runs []driverRun) {
	t.Helper()
	for run := ""; ; {
		h := history(t, driver, run)
		runs = append([]driverRun{{run, h}}, runs...)
		if run = h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId(); run == "" {
			break
		}
	}
	for _, r := range runs {
		h := r.h
		for _, e := range h.GetEvents() {
			switch e.GetEventType() {
			case enums.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				// The markers after it are the commands it completed with.
				tasks = append(tasks, taskLoad{})
			case enums.EVENT_TYPE_WORKFLOW_TASK_FAILED, enums.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
				lost++
			case enums.EVENT_TYPE_MARKER_RECORDED:
				if e.GetMarkerRecordedEventAttributes().GetMarkerName() == localActivityMarker {
					tasks[len(tasks)-1].markers++
					tasks[len(tasks)-1].bytes += proto.Size(e)
				}
			}
		}
	}
	return tasks, lost, runs
}

// markerIn tells whether a history asked change's version on its new side.
func markerIn(h *historypb.History, change string) bool {
	for _, e := range h.GetEvents() {
		if a := e.GetMarkerRecordedEventAttributes(); a != nil && strings.Contains(a.GetDetails()["change-id"].String(), change) {
			return true
		}
	}
	return false
}

// elementsRun adds up the markers of a driver's tasks.
func elementsRun(tasks []taskLoad) (n int) {
	for _, l := range tasks {
		n += l.markers
	}
	return n
}

// A driver of local elements runs at most its task's share of them in one
// workflow task (playbookwf.LocalTaskElements), and starts the next ones
// in the next task: a task's completion, and what a task lost with its
// worker runs again, stay that small, however fast the elements end.
// Before, one task ran elements until the SDK renewed it 8 s later.
func TestLocalLoopTaskHoldsItsShare(t *testing.T) {
	parallel(t, alone("cpu"))
	queue := ownQueueWorker(t, "local-loop-share")
	n := 3 * playbookwf.LocalTaskElements
	agg := endsWithin(t, 5*time.Minute, localLoopSource(n, 10), "--task-queue", queue)
	require.Equal(t, "completed", agg.Status)
	driver := agg.WorkflowID + ".each.loop"
	tasks, lost, runs := driverTasks(t, driver)
	require.Equal(t, n, elementsRun(tasks), "every element has one marker")
	most := 0
	for _, l := range tasks {
		most = max(most, l.markers)
	}
	t.Logf("%d elements in %d workflow tasks over %d runs of the driver, at most %d in one; %d failed or timed out", n, len(tasks), len(runs), most, lost)
	require.LessOrEqual(t, most, playbookwf.LocalTaskElements, "the elements one workflow task ran")
	require.True(t, markerIn(runs[0].h, "local-task-cap"))
	replay(t, "change_local_task_cap", driver, runs[0].id)
}

// A loop of local elements whose results are large (36 KB each) ends each
// workflow task once its elements' outcomes reach the task's share of
// bytes (playbookwf.LocalTaskBytes), so that no task's completion comes
// near the 4 MiB a request to the server may hold. Before, a task ran
// elements for 8 s: hundreds of them, tens of megabytes, and the server
// refused the completion (GRPC_MESSAGE_TOO_LARGE) and terminated the
// driver: the step failed. That is the stall of a starved worker too,
// without the starving: a task whose work outgrows what one task may do
// fails on every attempt.
func TestLocalLoopOfLargeResultsCompletes(t *testing.T) {
	parallel(t, alone("cpu"))
	queue := ownQueueWorker(t, "local-loop-large")
	const window = 4
	agg := endsWithin(t, 5*time.Minute, fmt.Sprintf(`metadata: {name: local-loop-large}
local: true
workflow:
  - step: each
    loop: { in: "1..600", mode: parallel, max_in_flight: %d }
    tool: { kind: shell, command: "printf '\"'; head -c 32768 /dev/zero | tr '\\0' x; printf '\"'" }
`, window), "--task-queue", queue)
	require.Equal(t, "completed", agg.Status, "%v", agg.Steps["each"].Error)
	driver := agg.WorkflowID + ".each.loop"
	tasks, lost, runs := driverTasks(t, driver)
	require.GreaterOrEqual(t, elementsRun(tasks), 600)
	largest, element := 0, 0
	for _, l := range tasks {
		largest = max(largest, l.bytes)
		if l.markers > 0 {
			element = max(element, l.bytes/l.markers)
		}
	}
	t.Logf("%d workflow tasks over %d runs of the driver, the largest carrying %d bytes of markers (%d each); %d failed or timed out", len(tasks), len(runs), largest, element, lost)
	require.Greater(t, element, 32<<10)
	require.LessOrEqual(t, largest, playbookwf.LocalTaskBytes+window*element, "the markers one workflow task carried")
	require.True(t, markerIn(runs[0].h, "local-task-cap"))
}
