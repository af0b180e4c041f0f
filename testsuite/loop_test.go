package testsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"

	"playbook/internal/quietlog"
	"playbook/interpreter/contract"
	"playbook/worker"
)

func TestLoop(t *testing.T) {
	parallel(t)
	r := runExample(t, "loop.yaml")
	require.Equal(t, "completed", r.agg.Status)
	results := r.agg.Steps["count_lines"].Result.([]any)
	require.Len(t, results, 3)
	for i, res := range results {
		require.Equal(t, map[string]any{"file": []string{"a.csv", "b.csv", "c.csv"}[i], "index": float64(i)}, res.(map[string]any)["json"], "results in input order")
	}
	require.Equal(t, []any{"a.csv", "b.csv", "c.csv"}, r.agg.Steps["summary"].Result)
}

func TestLoopElementFailureCancelsTheOthers(t *testing.T) {
	parallel(t, counts("playbook-loop-cancel"))
	r := runExample(t, "loop_cancel.yaml")
	require.Less(t, runTook(t, r.agg), 15*time.Second, "the elements sleeping 30s were cancelled")
	each := r.agg.Steps["each"]
	require.Equal(t, contract.StatusFailed, each.Status)
	require.Equal(t, "element 2 of 4 (index 1) failed: exited with code 1: element 2 is corrupt", each.Error.Message)
	require.Equal(t, 1.0, each.Error.Details.(map[string]any)["failed_elements"], "the cancelled elements are not failures: %v; results %v", each.Error.Details, each.Result)
	require.Empty(t, processesMatching("playbook-loop-cancel"), "no sleep is left")
}

// A parallel loop over 10,000 noop elements completes, and no workflow's
// history comes near Temporal's limit. Its noop elements are decided in the
// workflow, so it starts no batch (TestLongLoopRunsInBatches has batches).
func TestLoopOverTenThousandElements(t *testing.T) {
	parallel(t)
	start := time.Now()
	r := runExample(t, "loop_10k.yaml")
	wall := time.Since(start)
	require.Equal(t, "completed", r.agg.Status)
	require.Equal(t, "10000 results, sum 50005000", r.agg.Steps["total"].Result)

	largest, largestID := workflowHistoryLength(t, r.agg.WorkflowID), r.agg.WorkflowID
	batches := childWorkflowIDs(t, r.agg.WorkflowID)
	require.Empty(t, batches, "noop elements need no batch")
	t.Logf("10,000 elements, max_in_flight 50: wall time %s; largest history %d events (%s) across %d workflows", wall.Round(time.Millisecond), largest, largestID, len(batches)+1)
	fmt.Printf("loop over 10,000 elements: wall time %s, largest history %d events (%s)\n", wall.Round(time.Millisecond), largest, largestID)
	require.Less(t, largest, 10000, "well under Temporal's 50k-event history limit")
}

func workflowHistoryLength(t *testing.T, id string) int {
	d, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(t, err, id)
	return int(d.GetWorkflowExecutionInfo().GetHistoryLength())
}

// A loop longer than a batch runs its elements in one driver, a child
// workflow, with results in input order: 1,001 http elements.
func TestLongLoopRunsInItsDriver(t *testing.T) {
	parallel(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, strings.TrimPrefix(r.URL.Path, "/"))
	}))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "batches.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`metadata: {name: loop-batches}
workload: {url: ""}
workflow:
  - step: each
    loop: { in: "0..1000", mode: parallel, max_in_flight: 50 }
    tool: { kind: http, url: "{{ workload.url }}/{{ item }}" }
`), 0o644))
	code, out, errOut := cli(t, "run", "--address", server.Address, "--json", "--set", "url="+srv.URL, file)
	require.Equal(t, 0, code, errOut)
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &agg))
	results := agg.Steps["each"].Result.([]any)
	require.Len(t, results, 1001)
	for i, res := range results {
		require.Equal(t, fmt.Sprint(i), res.(map[string]any)["body"], "results in input order")
	}
	require.Equal(t, []string{agg.WorkflowID + ".each.loop"}, childWorkflowIDs(t, agg.WorkflowID), "one driver, no batches")
	require.Greater(t, agg.Steps["each"].Attempts, 0)
}

// A loop whose driver's history would pass 10,000 events continues as new,
// and its results still come back whole and in order: 6,000 elements of a
// noop polled by retry_when (an activity each, some 3 events).
func TestLongLoopContinuesAsNew(t *testing.T) {
	parallel(t)
	file := filepath.Join(t.TempDir(), "continued.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`metadata: {name: loop-continued}
workflow:
  - step: each
    loop: { in: "0..5999", mode: parallel, max_in_flight: 100 }
    tool: { kind: noop, result: "{{ item * 2 }}" }
    retry: { retry_when: "false" }
`), 0o644))
	code, out, errOut := cli(t, "run", "--address", server.Address, "--json", file)
	require.Equal(t, 0, code, errOut)
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &agg))
	replay(t, "", agg.WorkflowID, agg.RunID)
	// The driver reports its progress to the run, which `run` shows.
	require.Regexp(t, `each\s+loop: [1-9]\d* of 6000 elements done`, errOut)
	results := agg.Steps["each"].Result.([]any)
	require.Len(t, results, 6000)
	for i, r := range results {
		require.Equal(t, float64(2*i), r, "element %d", i)
	}
	driver := agg.WorkflowID + ".each.loop"
	runs := driverRuns(t, driver)
	require.Greater(t, len(runs), 1, "the driver continued as new")
	for _, runID := range runs {
		require.NoError(t, worker.Replay(history(t, driver, runID), quietlog.New()), "replaying %s run %s", driver, runID)
	}
	// The driver's progress signals come every 2 s of its time, more of
	// them the slower the machine: they are not counted, nor the workflow
	// tasks they wake.
	events := 0
	for _, e := range history(t, agg.WorkflowID, agg.RunID).GetEvents() {
		switch e.GetEventType() {
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, enums.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
			enums.EVENT_TYPE_WORKFLOW_TASK_STARTED, enums.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
		default:
			events++
		}
	}
	require.Less(t, events, 100, "the parent's history holds one child")
}

// A driver the server tells to continue as new for its event count alone
// (4 Ki events by default) goes on to its own bound, 10,000 events, below
// the server's warning: a loop of 1,500 elements, some 6,000 events, runs
// in one run of its driver, where its run used to end at the suggestion
// and let the loop's window run dry (version loop-own-count).
func TestLoopDriverRunsPastTheServersEventCount(t *testing.T) {
	parallel(t)
	file := writePlaybook(t, t.TempDir(), "own-count.yaml", `metadata: {name: loop-own-count}
workflow:
  - step: each
    loop: { in: "0..1499", mode: parallel, max_in_flight: 100 }
    tool: { kind: noop, result: "{{ item }}" }
    retry: { retry_when: "false" }
`)
	code, out, errOut := cli(t, "run", "--address", server.Address, "--json", file)
	require.Equal(t, 0, code, errOut)
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &agg))
	results := agg.Steps["each"].Result.([]any)
	require.Len(t, results, 1500)
	require.Equal(t, 1499.0, results[1499])
	driver := agg.WorkflowID + ".each.loop"
	runs := driverRuns(t, driver)
	require.Len(t, runs, 1, "the driver did not continue as new")
	suggested := false
	for _, e := range history(t, driver, runs[0]).GetEvents() {
		if a := e.GetWorkflowTaskStartedEventAttributes(); a.GetSuggestContinueAsNew() {
			require.Equal(t, []enums.SuggestContinueAsNewReason{enums.SUGGEST_CONTINUE_AS_NEW_REASON_TOO_MANY_HISTORY_EVENTS}, a.GetSuggestContinueAsNewReasons())
			suggested = true
		}
	}
	require.True(t, suggested, "the server suggested that the driver continue as new")
	require.True(t, hasMarker(t, driver, "loop-own-count"))
	replay(t, "change_loop_own_count_driver", driver, runs[0])
}

// driverRuns lists the runs of a workflow that continued as new, newest first.
func driverRuns(t *testing.T, id string) []string {
	var runs []string
	d, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(t, err)
	for runID := d.GetWorkflowExecutionInfo().GetExecution().GetRunId(); runID != ""; {
		runs = append(runs, runID)
		first := history(t, id, runID).GetEvents()[0]
		runID = first.GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
	}
	return runs
}

// childWorkflowIDs lists the child workflows a run started, in order.
func childWorkflowIDs(t *testing.T, workflowID string) []string {
	var ids []string
	for _, e := range history(t, workflowID, "").GetEvents() {
		if a := e.GetStartChildWorkflowExecutionInitiatedEventAttributes(); a != nil {
			ids = append(ids, a.GetWorkflowId())
		}
	}
	return ids
}
