package runs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
)

// EndedOutcome says how a run that is no longer open ended ("failed, 1 of
// 5 steps failed (transform)"), or "" while it is open or cannot be
// described (the caller then goes on and reports the server's own error).
func EndedOutcome(ctx context.Context, c Client, run string) string {
	d, err := c.DescribeWorkflowExecution(ctx, run, "")
	if err != nil {
		return ""
	}
	status := d.GetWorkflowExecutionInfo().GetStatus()
	if status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return ""
	}
	agg, err := Result(ctx, c.GetWorkflow(ctx, run, ""))
	if err != nil {
		// Terminated, timed out, or not a playbook run: Temporal's word.
		return strings.ToLower(strings.TrimPrefix(status.String(), "WORKFLOW_EXECUTION_STATUS_"))
	}
	steps := fmt.Sprintf("%d steps", agg.TotalSteps)
	if agg.TotalSteps == 1 {
		steps = "1 step"
	}
	outcome := fmt.Sprintf("%s, %d of %s failed", agg.Status, agg.FailedStepsCount, steps)
	if len(agg.FailedSteps) > 0 {
		outcome += " (" + strings.Join(agg.FailedSteps, ", ") + ")"
	}
	if len(agg.WarningSteps) > 0 {
		outcome += fmt.Sprintf("; %d allowed to fail (%s)", len(agg.WarningSteps), strings.Join(agg.WarningSteps, ", "))
	}
	return outcome
}

// RefuseEnded is the answer to cancelling a run that has already ended,
// the same for every front end: an EndedError saying how it ended. nil
// while the run is open.
func RefuseEnded(ctx context.Context, c Client, run string) error {
	return refuseEnded(ctx, c, run, "nothing to cancel")
}

func refuseEnded(ctx context.Context, c Client, run, nothing string) error {
	if outcome := EndedOutcome(ctx, c, run); outcome != "" {
		return &EndedError{Run: run, Outcome: outcome, Nothing: nothing}
	}
	return nil
}

// endedOr is err, what an Update to run came to, unless the run refused
// it or has ended: the server's answer to an Update of a closed run is
// that the workflow is not found, and how the run ended says more (an
// EndedError, nothing in it to act on).
func endedOr(ctx context.Context, c Client, run, nothing string, err error) error {
	var refused *RefusedError
	if err == nil || errors.As(err, &refused) {
		return err
	}
	if ended := refuseEnded(ctx, c, run, nothing); ended != nil {
		return ended
	}
	return err
}
