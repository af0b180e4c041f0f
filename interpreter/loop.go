package interpreter

import (
	"fmt"
	"reflect"
)

// MaxLoopItems bounds the elements of one loop: each is an activity, and
// the step's result holds one entry per element.
const MaxLoopItems = 100_000

// CheckLoopSize is the error for a loop over more than MaxLoopItems elements.
func CheckLoopSize(n int) error {
	if n > MaxLoopItems {
		return fmt.Errorf("loop gives %d elements, over the limit of %d elements per loop", n, MaxLoopItems)
	}
	return nil
}

// LoopItems evaluates a loop step's list against the run's current state.
func (r *Run) LoopItems(s *Step) ([]any, error) {
	if s.Loop.In == nil {
		return s.Loop.Items, nil
	}
	v, err := s.Loop.In.Eval(r.Env())
	if err != nil {
		return nil, fmt.Errorf("loop.in %w", err)
	}
	if items, ok := v.([]any); ok {
		return items, nil
	}
	rv := reflect.ValueOf(v)
	if v == nil || (rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array) {
		return nil, fmt.Errorf("loop.in %q gave %T, not a list", s.Loop.In.Source, v)
	}
	items := make([]any, rv.Len())
	for i := range items {
		items[i] = rv.Index(i).Interface()
	}
	return items, nil
}

// RenderLoop renders a loop step's tool once per element, with the
// iterator and `loop` ({index, length}) in scope.
func (r *Run) RenderLoop(s *Step, items []any) ([]map[string]any, error) {
	base := r.Env()
	specs := make([]map[string]any, len(items))
	for i, item := range items {
		env := make(map[string]any, len(base)+2)
		for k, v := range base {
			env[k] = v
		}
		env[s.Loop.Iterator] = item
		env["loop"] = map[string]any{"index": i, "length": len(items)}
		out, err := renderValue(s.Tool.Spec, r.pb.templates, env)
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		specs[i] = out.(map[string]any)
	}
	return specs, nil
}

// CombineLoop makes one step outcome of its elements' outcomes, in input
// order: the list of results when every element completed; otherwise the
// first failed element's error (elements cancelled because of it do not
// count), or a cancellation when elements were cancelled and none failed.
// The step's attempts are the most any element needed.
func CombineLoop(outcomes []Outcome) Outcome {
	combined := Outcome{Attempts: 0}
	results := make([]any, len(outcomes))
	var firstFailed, firstCancelled = -1, -1
	failed := 0
	for i, o := range outcomes {
		combined.Attempts = max(combined.Attempts, o.Attempts)
		for _, a := range o.AttemptErrors {
			a.Error.Message = fmt.Sprintf("element %d: %s", i, a.Error.Message)
			combined.AttemptErrors = append(combined.AttemptErrors, a)
		}
		switch {
		case o.Err == nil:
			results[i] = o.Result
		case o.Err.Type == ErrCancelled:
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
		combined.Err = &StepError{Type: o.Err.Type,
			Message: fmt.Sprintf("element %d of %d failed: %s", firstFailed, len(outcomes), o.Err.Message),
			Details: map[string]any{"index": firstFailed, "failed_elements": failed, "error": o.Err}}
	case firstCancelled >= 0:
		combined.Err = &StepError{Type: ErrCancelled, Message: fmt.Sprintf("the loop was cancelled at element %d of %d", firstCancelled, len(outcomes))}
	default:
		combined.Result = results
	}
	return combined
}
