package commands

import (
	"context"

	"go.temporal.io/sdk/client"

	"playbook/playbookwf"
)

// classifyStep sends the classify Update and waits for its answer; by says
// who classified ("" is the CLI's classify), reason why. A rejection (unknown
// step, not pending_failed, bad action) is a *temporal.ApplicationError.
func classifyStep(ctx context.Context, c client.Client, run, step, action, reason, by string) (string, error) {
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: run, UpdateName: playbookwf.UpdateClassify, Args: []any{step, action, reason, by},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var answer string
	if err == nil {
		err = h.Get(ctx, &answer)
	}
	return answer, err
}
