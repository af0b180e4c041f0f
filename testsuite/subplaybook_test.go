package testsuite

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"

	"playbook/interpreter/contract"
)

func workflowStatus(t *testing.T, id string) enums.WorkflowExecutionStatus {
	d, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(t, err)
	return d.GetWorkflowExecutionInfo().GetStatus()
}

func TestSubPlaybooks(t *testing.T) {
	parallel(t)
	r := runExample(t, "parent.yaml")
	agg := r.agg
	require.Equal(t, "completed", agg.Status)
	load := agg.Steps["load"]
	require.Equal(t, contract.StatusCompleted, load.Status)
	child := load.Result.(map[string]any)
	require.Equal(t, "load", child["playbook"], "the step's result is the child's aggregate")
	require.Equal(t, agg.WorkflowID+".load", child["workflow_id"], "the child's ID extends the parent's")
	require.Equal(t, "child inserted 7 rows", agg.Steps["report"].Result, "the child got its templated workload")
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_COMPLETED, workflowStatus(t, agg.WorkflowID+".load"))
}

func TestSubPlaybookFailureFailsTheStep(t *testing.T) {
	parallel(t)
	r := runExample(t, "parent.yaml", "--set", "child_fails=true")
	agg := r.agg
	require.Equal(t, 1, r.code)
	require.Equal(t, "failed", agg.Status, "the parent's end fails the run")
	require.Equal(t, []string{"load"}, agg.FailedSteps)
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_FAILED, workflowStatus(t, agg.WorkflowID+".load"), "the child workflow is Failed")

	load := agg.Steps["load"]
	require.Equal(t, contract.StatusFailed, load.Status)
	require.Nil(t, load.Result)
	require.True(t, load.RoutedToEnd)
	require.Equal(t, "playbook_failed", load.Error.Type)
	details := load.Error.Details.(map[string]any)
	require.Equal(t, "failed", details["status"], "the child's aggregate is in the error's details")
	require.Equal(t, []any{"insert"}, details["failed_steps"])
	require.Equal(t, contract.StatusSkipped, agg.Steps["report"].Status)

	// The tolerant child's end declared success: its step completed.
	tolerant := agg.Steps["tolerant"]
	require.Equal(t, contract.StatusCompleted, tolerant.Status)
	childAgg := tolerant.Result.(map[string]any)
	require.Equal(t, "completed", childAgg["status"])
	require.Equal(t, 1.0, childAgg["failed_steps_count"])
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_COMPLETED, workflowStatus(t, agg.WorkflowID+".tolerant"))
}

func TestCancellingAParentCancelsItsChildren(t *testing.T) {
	parallel(t, counts("playbook-long-running"))
	run := start(t, "../playbooks/nested_long.yaml", "playbook", nil)
	childID := run.GetID() + ".inner"
	waitRunning(t, childID, 2)
	require.NoError(t, tc.CancelWorkflow(context.Background(), run.GetID(), ""))
	agg := finish(t, run)
	replay(t, "nested_long_cancelled.yaml", run.GetID(), run.GetRunID())
	require.Equal(t, "cancelled", agg.Status)
	inner := agg.Steps["inner"]
	require.Equal(t, contract.StatusCancelled, inner.Status)
	require.Equal(t, "cancelled", inner.Error.Details.(map[string]any)["status"], "the parent waited for the child's end")
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_CANCELED, workflowStatus(t, childID))
	require.Empty(t, processesMatching("playbook-long-running"))
}

func TestSubPlaybookCycleIsInvalid(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("metadata: {name: a}\nworkflow:\n  - {step: call, tool: {kind: playbook, path: b.yaml}}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.yaml"), []byte("metadata: {name: b}\nworkflow:\n  - {step: back, tool: {kind: playbook, path: a.yaml}}\n"), 0o644))
	a := filepath.Join(dir, "a.yaml")
	code, _, errOut := cli(t, "run", "--address", server.Address, a)
	require.Equal(t, 2, code)
	require.Equal(t, filepath.Join(dir, "b.yaml")+`:3: step "back": sub-playbooks include each other: `+a+" -> "+filepath.Join(dir, "b.yaml")+" -> "+a+"\n", errOut)
}
