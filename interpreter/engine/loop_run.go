package engine

import (
	"fmt"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
)

// LoopItems evaluates a loop step's list against the run's current state.
func (r *Run) LoopItems(s *spec.Step) ([]any, error) {
	return loopItems(s, r.Env(), r.stubsFor([]*expr.Expr{s.Loop.In}))
}

// RenderLoop renders a loop step's tool once per element, with the
// iterator and `loop` ({index, length}) in scope.
func (r *Run) RenderLoop(s *spec.Step, items []any) ([]map[string]any, error) {
	base := r.Env()
	stubs := r.LoopStubs(s)
	specs := make([]map[string]any, len(items))
	for i := range items {
		toolSpec, err := RenderElement(r.pb, s, base, items, i, stubs)
		if err != nil {
			return nil, err
		}
		specs[i] = toolSpec
	}
	return specs, nil
}

// CombineLoop makes one step outcome of its elements' outcomes, in input
// order: the list of results when every element completed; otherwise the
// first failed element's error (elements cancelled because of it do not
// count), or a cancellation when elements were cancelled and none failed.
// The step's attempts are the most any element needed.
func CombineLoop(outcomes []contract.Outcome) contract.Outcome {
	combined := contract.Outcome{Attempts: 0}
	results := make([]any, len(outcomes))
	var firstFailed, firstCancelled = -1, -1
	failed := 0
	for i, o := range outcomes {
		combined.Attempts = max(combined.Attempts, o.Attempts)
		for _, a := range o.AttemptErrors {
			a.Error.Message = fmt.Sprintf("%s: %s", contract.ElementLabel(i, len(outcomes)), a.Error.Message)
			combined.AttemptErrors = append(combined.AttemptErrors, a)
		}
		switch {
		case o.Err == nil:
			results[i] = o.Result
			//workflowcheck:ignore order-free: fills a map by path
			for p, f := range o.Files {
				// Each element's files are its own: [INDEX]/PATH, as
				// the store keeps them.
				if combined.Files == nil {
					combined.Files = map[string]contract.FileRef{}
				}
				combined.Files[fmt.Sprintf("[%d]/%s", i, p)] = f
			}
		case o.Err.Type == contract.ErrCancelled:
			if firstCancelled < 0 {
				firstCancelled = i
			}
		default:
			failed++
			if firstFailed < 0 {
				firstFailed = i
			}
		}
	}
	switch {
	case firstFailed >= 0:
		o := outcomes[firstFailed]
		combined.Recovery = o.Recovery
		combined.Err = &contract.StepError{Type: o.Err.Type,
			Message: fmt.Sprintf("%s failed: %s", contract.ElementLabel(firstFailed, len(outcomes)), o.Err.Message),
			Details: map[string]any{"index": firstFailed, "failed_elements": failed, "error": o.Err}}
	case firstCancelled >= 0:
		combined.Err = &contract.StepError{Type: contract.ErrCancelled, Message: "the loop was cancelled at " + contract.ElementLabel(firstCancelled, len(outcomes))}
	default:
		combined.Result = results
	}
	return combined
}

// SetLoopProgress records a running loop step's progress; it is dropped
// when the step ends.
func (r *Run) SetLoopProgress(step string, p contract.LoopProgress) {
	if st := r.states[step]; st != nil && st.Status == contract.StatusRunning {
		st.Loop = &p
	}
}
