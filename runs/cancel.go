package commands

import (
	"context"
	"crypto/rand"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"

	"playbook/interpreter/contract"
	"playbook/runs"
)

// requestCancel cancels a run, with a reason when there is one; a run that
// has already ended is refused (runs.RefuseEnded). Workflow
// code cannot read a cancel request's reason, so the reason goes first as
// the cancel_reason signal, which the run records (its aggregate's and
// events' cancel_reason); the cancel request then carries it too, for
// Temporal's own history.
func requestCancel(ctx context.Context, conn *connection, run, reason string) error {
	if err := contract.CheckSize("the reason", len(reason)); err != nil {
		return invalid(err)
	}
	if err := runs.RefuseEnded(ctx, conn.client, run); err != nil {
		return err
	}
	if reason == "" {
		return conn.client.CancelWorkflow(ctx, run, "")
	}
	if err := conn.client.SignalWorkflow(ctx, run, "", contract.SignalCancelReason, reason); err != nil {
		return err
	}
	_, err := conn.client.WorkflowService().RequestCancelWorkflowExecution(ctx, &workflowservice.RequestCancelWorkflowExecutionRequest{
		Namespace:         conn.namespace,
		WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: run},
		Identity:          "playbook cancel",
		RequestId:         rand.Text(),
		Reason:            reason,
	})
	return err
}
