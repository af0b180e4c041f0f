package playbookwf

import (
	"errors"
	"path/filepath"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// startChild runs a sub-playbook as a child workflow of the generic
// workflow. Its ID extends the parent's with the step name, so the Web UI
// shows the tree; cancelling the step (or the parent) cancels the child,
// and the step waits for the child's own `end`.
func (x *executor) startChild(ctx workflow.Context, s *spec.Step, toolSpec map[string]any) (workflow.Future, *contract.StepError) {
	rel := toolSpec["path"].(string)
	path := spec.SubPlaybookPath(x.in.BaseDir, rel)
	src, ok := x.in.Files[path]
	if !ok {
		return nil, &contract.StepError{Type: contract.ErrTool, Message: "sub-playbook " + rel + " was not frozen into the run at submission"}
	}
	workload, _ := toolSpec["workload"].(map[string]any)
	child := contract.Input{File: filepath.Join(filepath.Dir(x.in.File), rel), BaseDir: filepath.Dir(path), Source: src, Workload: workload, Files: x.in.Files, Index: x.in.Index, LargeValues: x.in.LargeValues, LogicalTime: x.in.LogicalTime}
	if !s.OnCancelRun {
		// The child winds down by the parent's deadline too. A cleanup
		// step's child is never bound by it, whether it runs after the
		// deadline or (without a cancel) before it, as the graph says: a
		// cleanup step is never cancelled, by the deadline neither.
		child.Deadline = x.deadline
	}
	if r := x.in.ReuseChildren[s.Name]; r != nil {
		// A retry's child is a retry of the earlier run's child.
		child.Reuse, child.ReuseElements, child.ReuseChildren = r.Reuse, r.ReuseElements, r.ReuseChildren
		child.Origin = &contract.Origin{RetryOf: r.RetryOf}
		if o := x.in.Origin; o != nil {
			child.Origin.By, child.Origin.Reason = o.By, o.Reason
		}
	}
	opts := workflow.ChildWorkflowOptions{
		WorkflowID:          x.childID(ctx, s.Name, s.Name),
		TaskQueue:           x.info.TaskQueueName,
		StaticSummary:       "step " + s.Name + ": sub-playbook " + rel,
		WaitForCancellation: true,
	}
	if x.in.Index {
		if childPb, err := spec.Parse(child.File, []byte(src)); err == nil {
			opts.TypedSearchAttributes = startAttributes(childPb.Name)
		}
	}
	if s.Timeout > 0 {
		opts.WorkflowExecutionTimeout = s.Timeout
	}
	if err := x.tooLarge("the input of sub-playbook step "+s.Name, child); err != nil {
		return nil, err
	}
	return workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, opts), contract.WorkflowName, child), nil
}

// childOutcome reads a finished sub-playbook: its aggregate is the step's
// result when it completed, and its error's details when it failed.
func (x *executor) childOutcome(f workflow.Future) contract.Outcome {
	var agg map[string]any
	err := f.Get(x.ctx, &agg)
	if err == nil {
		return contract.Outcome{Result: agg, Attempts: 1}
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == contract.FailedErrorType {
		_ = appErr.Details(&agg)
		return contract.Outcome{Err: &contract.StepError{Type: contract.ErrPlaybookFailed, Message: appErr.Message(), Details: agg},
			Attempts: 1, Recovery: contract.RecoveryNoHandler}
	}
	var canErr *temporal.CanceledError
	if errors.As(err, &canErr) {
		_ = canErr.Details(&agg)
		return contract.Outcome{Err: &contract.StepError{Type: contract.ErrCancelled, Message: "the sub-playbook was cancelled", Details: agg}, Attempts: 1}
	}
	return contract.Outcome{Err: &contract.StepError{Type: contract.ErrPlaybookError, Message: err.Error()}, Attempts: 1, Recovery: contract.RecoveryNoHandler}
}
