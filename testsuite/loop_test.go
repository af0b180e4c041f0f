package testsuite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"playbook/interpreter"
	"playbook/interpreter/playbookwf"
)

func TestLoop(t *testing.T) {
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
	start := time.Now()
	r := runExample(t, "loop_cancel.yaml")
	require.Less(t, time.Since(start), 15*time.Second, "the elements sleeping 30s were cancelled")
	each := r.agg.Steps["each"]
	require.Equal(t, interpreter.StatusFailed, each.Status)
	require.Equal(t, "element 1 of 4 failed: exited with code 1: element 2 is corrupt", each.Error.Message)
	require.Equal(t, 1.0, each.Error.Details.(map[string]any)["failed_elements"], "the cancelled elements are not failures")
	require.Empty(t, processesMatching("playbook-loop-cancel"), "no sleep is left")
}

// A parallel loop over 10,000 noop elements completes, and no workflow's
// history comes near Temporal's limit: the elements run in batches of
// child workflows.
func TestLoopOverTenThousandElements(t *testing.T) {
	start := time.Now()
	r := runExample(t, "loop_10k.yaml")
	wall := time.Since(start)
	require.Equal(t, "completed", r.agg.Status)
	require.Equal(t, "10000 results, sum 50005000", r.agg.Steps["total"].Result)

	largest, largestID := workflowHistoryLength(t, r.agg.WorkflowID), r.agg.WorkflowID
	batches := (10000 + playbookwf.LoopBatchSize - 1) / playbookwf.LoopBatchSize
	for b := 0; b < batches; b++ {
		id := fmt.Sprintf("%s.each.batch-%d", r.agg.WorkflowID, b)
		if n := workflowHistoryLength(t, id); n > largest {
			largest, largestID = n, id
		}
	}
	t.Logf("10,000 elements, max_in_flight 50: wall time %s; largest history %d events (%s) across %d workflows", wall.Round(time.Millisecond), largest, largestID, batches+1)
	fmt.Printf("loop over 10,000 elements: wall time %s, largest history %d events (%s)\n", wall.Round(time.Millisecond), largest, largestID)
	require.Less(t, largest, 10000, "well under Temporal's 50k-event history limit")
}

func workflowHistoryLength(t *testing.T, id string) int {
	d, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(t, err, id)
	return int(d.GetWorkflowExecutionInfo().GetHistoryLength())
}
