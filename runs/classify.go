package commands

import (
	"context"

	"go.temporal.io/sdk/client"

	"playbook/interpreter/contract"
)

// classifyStep sends the classify Update and waits for its answer; by says
// who classified ("" is the CLI's classify), reason why. A rejection (unknown
// step, not pending_failed, bad action) is a *temporal.ApplicationError.
func classifyStep(ctx context.Context, c client.Client, run, step, action, reason, by string) (string, error) {
	return classifyStepWith(ctx, c, run, step, action, reason, by, "")
}

// classifyStepWith is classifyStep with a result (JSON text) for skip: the
// step completes with it, and the steps after it read it.
func classifyStepWith(ctx context.Context, c client.Client, run, step, action, reason, by, result string) (string, error) {
	args := []any{step, action, reason, by}
	if result != "" {
		args = append(args, result)
	}
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: run, UpdateName: contract.UpdateClassify, Args: args,
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var answer string
	if err == nil {
		err = h.Get(ctx, &answer)
	}
	return answer, err
}
