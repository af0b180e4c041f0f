package playbookwf

import (
	"encoding/json"

	"go.temporal.io/sdk/workflow"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
	"playbook/interpreter/spec"
)

// needsNoProcess tells whether a step's outcome is known without running
// anything: a noop returns its rendered result. A retry_when could poll
// even a noop, so such a step keeps its activity and the retry decision.
func needsNoProcess(s *spec.Step) bool {
	return s.Tool != nil && s.Tool.Kind == "noop" && (s.Retry == nil || s.Retry.RetryWhen == nil)
}

// decidesInWorkflow tells whether this noop step is decided in the
// workflow. The version is asked for where the run's first noop step
// starts, so a history recorded before the change replays unchanged up to
// there and keeps its noop activities after.
func (x *executor) decidesInWorkflow(s *spec.Step) bool {
	if !needsNoProcess(s) {
		return false
	}
	if x.noopVersion == nil {
		v := version(x.ctx, changeNoopInWorkflow)
		x.noopVersion = &v
	}
	return *x.noopVersion >= 1
}

// decideInWorkflow gives a noop step (or a loop of noop elements) its
// outcome at once, as an already settled future shaped like the activity's
// (one attempt, the rendered result as a JSON round trip makes it).
func (x *executor) decideInWorkflow(ctx workflow.Context, s *spec.Step) (workflow.Future, *contract.StepError) {
	f, settle := workflow.NewFuture(ctx)
	if s.Loop == nil {
		toolSpec, err := x.run.RenderTool(s)
		if err != nil {
			return nil, &contract.StepError{Type: contract.ErrTemplate, Message: err.Error()}
		}
		result, err := asActivityResult(toolSpec["result"])
		if err != nil {
			return nil, &contract.StepError{Type: contract.ErrTool, Message: err.Error()}
		}
		settle.Set(contract.StepOutput{Result: result, Attempts: 1}, nil)
		return f, nil
	}
	items, stepErr := x.loopItems(s)
	if stepErr != nil {
		return nil, stepErr
	}
	// Element by element, pacing: a loop of 100,000 would otherwise render
	// and decide every element in one go.
	scope := x.run.LoopScope(s)
	stubs := x.run.LoopStubs(s)
	outcomes := make([]contract.Outcome, len(items))
	for i := range items {
		x.pace()
		toolSpec, err := engine.RenderElement(x.run.Playbook(), s, scope, items, i, stubs)
		if err != nil {
			return nil, &contract.StepError{Type: contract.ErrTemplate, Message: err.Error()}
		}
		result, err := asActivityResult(toolSpec["result"])
		if err != nil {
			return nil, &contract.StepError{Type: contract.ErrTool, Message: err.Error()}
		}
		outcomes[i] = contract.Outcome{Result: result, Attempts: 1}
	}
	settle.Set(engine.CombineLoop(outcomes), nil)
	return f, nil
}

// asActivityResult gives v the shape a result has after the activity's
// JSON payloads (numbers become float64, and so on), so that expressions
// reading it behave as they did when noop was an activity.
func asActivityResult(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}

// raise fails a fail step with the error it describes, in the workflow:
// no activity, no attempt to retry (submission refuses retry on it), and,
// the kind being newer than every recorded history, no version: no old
// run has such a step. The future holds the step's outcome, as a loop's
// does (outcome reads it).
func (x *executor) raise(ctx workflow.Context, s *spec.Step) (workflow.Future, *contract.StepError) {
	toolSpec, err := x.run.RenderTool(s)
	if err != nil {
		return nil, &contract.StepError{Type: contract.ErrTemplate, Message: err.Error()}
	}
	f, settle := workflow.NewFuture(ctx)
	settle.Set(contract.Outcome{Err: engine.Raised(s.Name, toolSpec), Attempts: 1}, nil)
	return f, nil
}
