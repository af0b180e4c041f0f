package testsuite

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"

	"playbook/interpreter/contract"
)

// runFile runs a playbook written for the test with `run --json` and
// replays its history.
func runFile(t *testing.T, source string) *contract.Aggregate {
	t.Helper()
	file := filepath.Join(t.TempDir(), "playbook.yaml")
	require.NoError(t, os.WriteFile(file, []byte(source), 0o644))
	code, out, errOut := cli(t, "run", "--address", server.Address, "--json", file)
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &agg), "stdout is exactly the aggregate; stderr:\n%s", errOut)
	require.Equal(t, exitCodeFor(agg.Status), code, errOut)
	replay(t, "", agg.WorkflowID, agg.RunID)
	return &agg
}

// Retry delays fire when they are due: a step failing twice with 200 ms
// between attempts takes its three attempts in well under a second (a timer
// used to wait about a second whatever its length). Measured between the
// history's ActivityTaskScheduled and ActivityTaskCompleted.
func TestRetryDelaysFireOnTime(t *testing.T) {
	// Serial: bounds a wall time to 700ms (see parallel).
	agg := runFile(t, `metadata: {name: on-time}
workflow:
  - step: flaky
    tool: { kind: shell, command: '[ "$PLAYBOOK_ATTEMPT" -ge 3 ]' }
    retry: { max_attempts: 3, initial_delay: 200ms, backoff_multiplier: 1, jitter: false }
`)
	require.Equal(t, "completed", agg.Status)
	require.Equal(t, 3, agg.Steps["flaky"].Attempts)
	var scheduled, completed time.Time
	for _, e := range history(t, agg.WorkflowID, agg.RunID).GetEvents() {
		switch e.GetEventType() {
		case enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			scheduled = e.GetEventTime().AsTime()
		case enums.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			completed = e.GetEventTime().AsTime()
		}
	}
	took := completed.Sub(scheduled)
	t.Logf("three attempts, two delays of 200ms: %s", took)
	require.GreaterOrEqual(t, took, 400*time.Millisecond, "both delays were waited")
	require.Less(t, took, 700*time.Millisecond, "each delay fired when due, not a second later")
}

// noop steps, and loops of them, are decided inside the workflow: no
// activity in the history, the same results and attempts as before.
func TestNoopStepsRunWithoutActivities(t *testing.T) {
	parallel(t)
	agg := runFile(t, `metadata: {name: noops}
workload: {n: 3}
workflow:
  - step: first
    tool: { kind: noop, result: { n: "{{ workload.n }}", tag: "x-{{ workload.n }}" } }
    next: each
  - step: each
    loop: { in: "1..steps.first.result.n" }
    tool: { kind: noop, result: "{{ item * 2 }}" }
    next: last
  - step: last
    tool: { kind: noop, result: "{{ sum(steps.each.result) / 4 }}" }
`)
	require.Equal(t, "completed", agg.Status)
	require.Equal(t, map[string]any{"n": 3.0, "tag": "x-3"}, agg.Steps["first"].Result)
	require.Equal(t, []any{2.0, 4.0, 6.0}, agg.Steps["each"].Result)
	require.Equal(t, 3.0, agg.Steps["last"].Result, "the loop's results are numbers, as an activity returned them")
	for _, name := range []string{"first", "each", "last"} {
		require.Equal(t, contract.StatusCompleted, agg.Steps[name].Status, name)
		require.Equal(t, 1, agg.Steps[name].Attempts, name)
	}
	for _, e := range history(t, agg.WorkflowID, agg.RunID).GetEvents() {
		require.NotEqual(t, enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, e.GetEventType(), "no activity: %v", e)
		require.NotEqual(t, enums.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED, e.GetEventType(), "no child: %v", e)
	}
}
