package commands

import (
	"context"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// endedOutcome says how a run that is no longer open ended ("failed, 1 of 5
// steps failed (transform)"), or "" while it is open or cannot be described
// (the command then goes on and reports the server's own error).
func endedOutcome(ctx context.Context, c client.Client, run string) string {
	d, err := c.DescribeWorkflowExecution(ctx, run, "")
	if err != nil {
		return ""
	}
	status := d.GetWorkflowExecutionInfo().GetStatus()
	if status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return ""
	}
	agg, err := result(ctx, c.GetWorkflow(ctx, run, ""))
	if err != nil {
		// Terminated, timed out, or not a playbook run: Temporal's word.
		return strings.ToLower(strings.TrimPrefix(status.String(), "WORKFLOW_EXECUTION_STATUS_"))
	}
	outcome := fmt.Sprintf("%s, %d of %s failed", agg.Status, agg.FailedStepsCount, countOf(agg.TotalSteps, "step"))
	if len(agg.FailedSteps) > 0 {
		outcome += " (" + strings.Join(agg.FailedSteps, ", ") + ")"
	}
	return outcome + allowedToFail(agg)
}

// refuseEnded is the answer to cancelling a run that has already ended,
// the same for the CLI (exit 5) and the MCP server's cancel_run: how it
// ended. nil while the run is open.
func refuseEnded(ctx context.Context, c client.Client, run string) error {
	if outcome := endedOutcome(ctx, c, run); outcome != "" {
		return &exitError{code: exitEnded, err: fmt.Errorf("%s already ended: %s; nothing to cancel", run, outcome)}
	}
	return nil
}
