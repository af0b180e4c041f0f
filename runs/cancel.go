package runs

import (
	"context"
	"crypto/rand"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"

	"playbook/interpreter/contract"
)

// Cancel cancels a run, with a reason when there is one; a run that has
// already ended is refused (RefuseEnded). Workflow code cannot read a
// cancel request's reason, so the reason goes first as the cancel_reason
// signal, which the run records (its aggregate's and events'
// cancel_reason); the cancel request then carries it too, for Temporal's
// own history. The caller checks the reason's size (contract.CheckSize).
func Cancel(ctx context.Context, c Client, namespace, run, reason string) error {
	if err := RefuseEnded(ctx, c, run); err != nil {
		return err
	}
	if reason == "" {
		return notFound(run, c.CancelWorkflow(ctx, run, ""))
	}
	if err := c.SignalWorkflow(ctx, run, "", contract.SignalCancelReason, reason); err != nil {
		return notFound(run, err)
	}
	_, err := c.WorkflowService().RequestCancelWorkflowExecution(ctx, &workflowservice.RequestCancelWorkflowExecutionRequest{
		Namespace:         namespace,
		WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: run},
		Identity:          "playbook cancel",
		RequestId:         rand.Text(),
		Reason:            reason,
	})
	return notFound(run, err)
}

// Terminate is Temporal's hard stop of an open run; a run that has
// already ended is refused (an EndedError saying how it ended).
func Terminate(ctx context.Context, c Client, run, reason string) error {
	if err := c.TerminateWorkflow(ctx, run, "", reason); err != nil {
		if ended := refuseEnded(ctx, c, run, "nothing to terminate"); ended != nil {
			return ended
		}
		return notFound(run, err)
	}
	return nil
}

// Drain lets the run's running steps finish and starts no new one (the
// drain signal); a run that has already ended is refused (RefuseEnded:
// an EndedError), and the signal's own error is the server's.
func Drain(ctx context.Context, c Client, run, reason string) error {
	if err := RefuseEnded(ctx, c, run); err != nil {
		return err
	}
	return c.SignalWorkflow(ctx, run, "", contract.SignalDrain, reason)
}
