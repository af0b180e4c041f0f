package testsuite

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/converter"
)

// What the Web UI shows: the run's summary names the playbook and its
// description, its current details hold the step table, and every activity
// and child workflow carries its step's name.
// workflowMetadata asks the SDK's built-in metadata query: what the Web
// UI reads for a run's current details.
func workflowMetadata(t *testing.T, id string) *sdkpb.WorkflowMetadata {
	t.Helper()
	v, err := tc.QueryWorkflow(context.Background(), id, "", "__temporal_workflow_metadata")
	require.NoError(t, err)
	var meta sdkpb.WorkflowMetadata
	require.NoError(t, v.Get(&meta))
	return &meta
}

func TestWhatTheWebUIShows(t *testing.T) {
	parallel(t)
	r := runExample(t, "parent.yaml", "--set", "child_fails=true")
	id := r.agg.WorkflowID
	dc := converter.GetDefaultDataConverter()

	d, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(t, err)
	var summary string
	require.NoError(t, dc.FromPayload(d.GetExecutionConfig().GetUserMetadata().GetSummary(), &summary))
	require.Equal(t, "playbook parent: Runs sub-playbooks as child workflows and uses their aggregates", summary)

	meta := workflowMetadata(t, id)
	require.Contains(t, meta.GetCurrentDetails(), "| step | status | attempts | note |")
	// A failed run's first view leads with its cause, down through the sub-playbook.
	require.Contains(t, meta.GetCurrentDetails(), "\n\n**failed**: load: playbook_failed: playbook load failed: 1 of 1 steps failed (insert); insert: exit_code: exited with code 1: constraint violated\n\n")
	require.Contains(t, meta.GetCurrentDetails(), "| load | failed | 1 | playbook_failed: playbook load failed: 1 of 1 steps failed (insert); insert: exit_code: exited with code 1: constraint violated (routed to end) |")
	require.Contains(t, meta.GetCurrentDetails(), "| report | skipped | 0 | upstream load failed |")

	summaries := map[string]bool{}
	for _, e := range history(t, id, "").GetEvents() {
		var s string
		if p := e.GetUserMetadata().GetSummary(); p != nil {
			require.NoError(t, dc.FromPayload(p, &s))
			summaries[s] = true
		}
	}
	require.True(t, summaries["prepare"], "the activity's summary is its step: %v", summaries)
	require.True(t, summaries["step load: sub-playbook sub/load.yaml"], "%v", summaries)
	require.True(t, summaries["step tolerant: sub-playbook sub/tolerant.yaml"], "%v", summaries)
}
