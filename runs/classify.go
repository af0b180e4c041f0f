package runs

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
)

// A person's decisions on a run: classifying a pending_failed step,
// approving or rejecting an approval step, and what they are asked from.

// Pending lists the run's pending_failed steps waiting for a classification.
func Pending(ctx context.Context, c Client, run string) ([]engine.PendingStep, error) {
	var steps []engine.PendingStep
	err := query(ctx, c, run, contract.QueryPending, &steps)
	return steps, err
}

// Approvals lists the run's approval steps waiting for a decision.
func Approvals(ctx context.Context, c Client, run string) ([]engine.WaitingApproval, error) {
	var approvals []engine.WaitingApproval
	err := query(ctx, c, run, contract.QueryApprovals, &approvals)
	return approvals, err
}

func query(ctx context.Context, c Client, run, name string, answer any) error {
	v, err := c.QueryWorkflow(ctx, run, "", name)
	if err == nil {
		err = v.Get(answer)
	}
	return notFound(run, encrypted(run, err))
}

// WaitingApproval finds the step among the run's approvals waiting for a
// decision; a step not there is refused.
func WaitingApproval(ctx context.Context, c Client, run, step string) (engine.WaitingApproval, error) {
	approvals, err := Approvals(ctx, c, run)
	if err != nil {
		return engine.WaitingApproval{}, err
	}
	for _, w := range approvals {
		if w.Step == step {
			return w, nil
		}
	}
	if ended := refuseEnded(ctx, c, run, "no step waits for approval"); ended != nil {
		return engine.WaitingApproval{}, ended
	}
	return engine.WaitingApproval{}, &RefusedError{Run: run, Err: fmt.Errorf("step %q of run %s is not waiting for approval", step, run)}
}

// RunningSubPlaybooks are a run's sub-playbook steps still running: an
// approval or a classification there waits in the child's run.
func RunningSubPlaybooks(ctx context.Context, c Client, run string) []string {
	agg, err := QueryState(ctx, c, run)
	pb := FrozenPlaybook(ctx, c, run)
	if err != nil || pb == nil {
		return nil
	}
	var out []string
	for _, s := range pb.Steps {
		if st := agg.Steps[s.Name]; st != nil && st.Status == contract.StatusRunning && s.Tool != nil && s.Tool.Kind == "playbook" {
			out = append(out, s.Name)
		}
	}
	return out
}

// Classify sends the classify Update and waits for its answer; by says
// who classified ("" is the CLI's classify), reason why, result (JSON
// text, with skip) what the step completes with. The run's refusal
// (unknown step, not pending_failed, bad action) is a RefusedError.
func Classify(ctx context.Context, c Client, run, step, action, reason, by, result string) (string, error) {
	// What the run's validator refuses whatever its state is refused
	// here, before anything is sent (an InvalidError).
	if err := contract.CheckName("by", by); err != nil {
		return "", &InvalidError{Err: err}
	}
	if err := contract.CheckLine("the reason", reason); err != nil {
		return "", &InvalidError{Err: err}
	}
	if err := contract.CheckSize("the classification", len(step)+len(action)+len(reason)+len(by)+len(result)); err != nil {
		return "", &InvalidError{Err: err}
	}
	args := []any{step, action, reason, by}
	if result != "" {
		args = append(args, result)
	}
	answer, err := update(ctx, c, client.UpdateWorkflowOptions{WorkflowID: run, UpdateName: contract.UpdateClassify, Args: args})
	return answer, endedOr(ctx, c, run, "no step waits for a classification", err)
}

// DecideApproval sends the approval Update and waits for its answer,
// again while the run cannot answer yet (Deliver). The run's validator's
// refusal is a RefusedError.
func DecideApproval(ctx context.Context, c Client, run string, d contract.ApprovalDecision) (string, error) {
	return Deliver(ctx, run, func(ctx context.Context, updateID string) (string, error) {
		return update(ctx, c, client.UpdateWorkflowOptions{WorkflowID: run, UpdateName: contract.UpdateApproval, Args: []any{d}, UpdateID: updateID})
	})
}

// update sends an Update and waits for the run's answer.
func update(ctx context.Context, c Client, opts client.UpdateWorkflowOptions) (string, error) {
	opts.WaitForStage = client.WorkflowUpdateStageCompleted
	h, err := c.UpdateWorkflow(ctx, opts)
	var answer string
	if err == nil {
		err = h.Get(ctx, &answer)
	}
	var rejected *temporal.ApplicationError
	if errors.As(err, &rejected) {
		return answer, &RefusedError{Run: opts.WorkflowID, Err: err}
	}
	return answer, notFound(opts.WorkflowID, err)
}
