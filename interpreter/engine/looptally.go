package engine

import (
	"fmt"
	"maps"
	"reflect"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
)

// A long loop runs in a driver workflow of its own (playbookwf), which may
// continue as new many times over: what it carries from one run to the
// next, and what it returns to its step, is a LoopTally. Its size is
// bounded whatever the loop's length.

// LoopResultBudget bounds the results a loop's tally keeps: past it the
// step's result is a stub (Truncated), and each element's result stays in
// its activity's completion in the driver's history.
const LoopResultBudget = 512 << 10

// loopAttemptRecords bounds the failed attempts a tally keeps.
const loopAttemptRecords = 100

// LoopTally counts a loop's element outcomes as they end, in any order,
// and keeps their results by element index while they fit
// LoopResultBudget. Its JSON names travel between the runs of a driver.
type LoopTally struct {
	Total int `json:"total"`
	// Results are the elements' results by index, of the elements done;
	// dropped (and Truncated set) once ResultBytes is over budget. A map,
	// so that the elements not done yet cost nothing to carry.
	Results     map[int]any `json:"results,omitempty"`
	ResultBytes int         `json:"result_bytes"`
	Truncated   bool        `json:"truncated,omitempty"`
	Done        int         `json:"done"`
	Failed      int         `json:"failed"`
	Cancelled   int         `json:"cancelled"`
	// FirstFailed is the lowest index of a failed element (-1: none), with
	// its error and the failure handler's outcome.
	FirstFailed         int                 `json:"first_failed"`
	FirstFailedError    *contract.StepError `json:"first_failed_error,omitempty"`
	FirstFailedRecovery string              `json:"first_failed_recovery,omitempty"`
	// FirstCancelled is the lowest index of a cancelled element (-1: none).
	FirstCancelled int `json:"first_cancelled"`
	// Attempts is the most attempts an element took.
	Attempts int `json:"attempts"`
	// AttemptErrors are the first failed attempts, each labelled with its
	// element; AttemptErrorsDropped counts the ones past them.
	AttemptErrors        []contract.AttemptRecord `json:"attempt_errors,omitempty"`
	AttemptErrorsDropped int                      `json:"attempt_errors_dropped,omitempty"`
}

// NewLoopTally is the tally of a loop of n elements, none ended yet.
func NewLoopTally(n int) *LoopTally {
	return &LoopTally{Total: n, Results: map[int]any{}, FirstFailed: -1, FirstCancelled: -1}
}

// Add counts element i's outcome.
func (t *LoopTally) Add(i int, o contract.Outcome) {
	t.Attempts = max(t.Attempts, o.Attempts)
	for _, a := range o.AttemptErrors {
		if len(t.AttemptErrors) == loopAttemptRecords {
			t.AttemptErrorsDropped++
			continue
		}
		a.Error.Message = fmt.Sprintf("%s: %s", elementLabel(i, t.Total), a.Error.Message)
		t.AttemptErrors = append(t.AttemptErrors, a)
	}
	switch {
	case o.Err == nil:
		t.Done++
		t.keep(i, o.Result)
	case o.Err.Type == contract.ErrCancelled:
		t.Cancelled++
		if t.FirstCancelled < 0 || i < t.FirstCancelled {
			t.FirstCancelled = i
		}
	default:
		t.Failed++
		if t.FirstFailed < 0 || i < t.FirstFailed {
			t.FirstFailed, t.FirstFailedError, t.FirstFailedRecovery = i, o.Err, o.Recovery
		}
	}
}

// AddKept counts n elements done whose results, of size bytes, are kept
// elsewhere (a retry's reused elements, which the run that started the
// driver puts into the loop's result): they count against the budget, and
// the list has null in their places.
func (t *LoopTally) AddKept(n, bytes int) {
	t.Done += n
	if t.ResultBytes += bytes; t.ResultBytes > LoopResultBudget {
		t.Truncate()
	}
}

// keep records a result while the results fit their budget.
func (t *LoopTally) keep(i int, result any) {
	n, err := contract.EncodedSize(result)
	if err != nil {
		result = map[string]any{"unencodable": true, "error": err.Error()}
		n, _ = contract.EncodedSize(result)
	}
	t.ResultBytes += n + 1 // and its comma in the list
	if t.Truncated || t.ResultBytes > LoopResultBudget {
		t.Truncate()
		return
	}
	if t.Results == nil {
		t.Results = map[int]any{}
	}
	t.Results[i] = result
}

// Truncate drops the results the tally keeps: the step's result will be a
// stub. A driver does it too when its tally would not fit the input of
// its next run.
func (t *LoopTally) Truncate() {
	t.Truncated, t.Results = true, nil
}

// DropAttemptErrors drops the failed attempts the tally keeps (counted
// in AttemptErrorsDropped): what a driver does when its tally would not
// fit the input of its next run.
func (t *LoopTally) DropAttemptErrors() {
	t.AttemptErrorsDropped += len(t.AttemptErrors)
	t.AttemptErrors = nil
}

// Progress is the tally as a running loop's progress.
func (t *LoopTally) Progress(running int) contract.LoopProgress {
	return contract.LoopProgress{Total: t.Total, Done: t.Done, Failed: t.Failed, Cancelled: t.Cancelled, Running: running}
}

// Outcome is the loop step's outcome, as CombineLoop gives it for a short
// loop: the results in element order when every element completed (a stub
// saying where they are, fullIn, when they were over budget); otherwise the
// first failed element's error, or the loop's cancellation.
func (t *LoopTally) Outcome(fullIn string) contract.Outcome {
	o := contract.Outcome{Attempts: t.Attempts, AttemptErrors: t.AttemptErrors}
	if t.AttemptErrorsDropped > 0 {
		o.AttemptErrors = append(o.AttemptErrors, contract.AttemptRecord{Error: contract.StepError{Type: "truncated",
			Message: fmt.Sprintf("%d more failed attempts of the loop's elements are in its history", t.AttemptErrorsDropped)}})
	}
	switch {
	case t.FirstFailed >= 0:
		o.Recovery = t.FirstFailedRecovery
		o.Err = &contract.StepError{Type: t.FirstFailedError.Type,
			Message: fmt.Sprintf("%s failed: %s", elementLabel(t.FirstFailed, t.Total), t.FirstFailedError.Message),
			Details: map[string]any{"index": t.FirstFailed, "failed_elements": t.Failed, "error": t.FirstFailedError}}
	case t.FirstCancelled >= 0:
		o.Err = &contract.StepError{Type: contract.ErrCancelled, Message: "the loop was cancelled at " + elementLabel(t.FirstCancelled, t.Total)}
	case t.Truncated:
		o.Result = expr.Truncated(t.ResultBytes+1, LoopResultBudget, fullIn)
	default:
		results := make([]any, t.Total)
		//workflowcheck:ignore order-free: places each result at its index
		for i, v := range t.Results {
			results[i] = v
		}
		o.Result = results
	}
	return o
}

// LoopScope is the part of the run's scope that a loop step's list and
// tool templates read: what its driver needs to evaluate and render them.
func (r *Run) LoopScope(s *spec.Step) map[string]any {
	exprs := r.toolReads(s)
	if s.Loop.In != nil {
		exprs = append(exprs, s.Loop.In)
	}
	return r.ScopeFor(exprs...)
}

// DriverScope is, in a loop's driver, the scope as the run saw it: a scope
// that came through JSON (LoopScope, in the driver's input) has float
// numbers where the run had whole ones, so the workload is merged again
// from the playbook's defaults and the run's overrides (as NewRun does),
// and each step's attempts is a whole number again.
func DriverScope(pb *spec.Playbook, scope, overrides map[string]any) map[string]any {
	out := maps.Clone(scope)
	out["workload"] = spec.MergeWorkload(pb.Workload, overrides)
	steps := map[string]any{}
	//workflowcheck:ignore order-free: fills a map
	for name, v := range stepsOf(scope) {
		if entry, ok := v.(map[string]any); ok {
			if n, ok := entry["attempts"].(float64); ok {
				entry = maps.Clone(entry)
				entry["attempts"] = int(n)
			}
			v = entry
		}
		steps[name] = v
	}
	out["steps"] = steps
	return out
}

func stepsOf(scope map[string]any) map[string]any {
	steps, _ := scope["steps"].(map[string]any)
	return steps
}

// ElementItems evaluates a loop step's list against a scope (LoopScope),
// as Run.LoopItems does against the whole run.
func ElementItems(s *spec.Step, scope map[string]any) ([]any, error) {
	return loopItems(s, scope)
}

// RenderElement renders a loop step's tool for element i of items against
// a scope (LoopScope), as Run.RenderLoop does for every element.
func RenderElement(pb *spec.Playbook, s *spec.Step, scope map[string]any, items []any, i int) (map[string]any, error) {
	env := make(map[string]any, len(scope)+2)
	maps.Copy(env, scope)
	env[s.Loop.Iterator] = items[i]
	env["loop"] = map[string]any{"index": i, "length": len(items)}
	out, err := expr.RenderValue(s.Tool.Spec, pb.Templates(), env)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", elementLabel(i, len(items)), err)
	}
	return out.(map[string]any), nil
}

// loopItems evaluates a loop step's list against env.
func loopItems(s *spec.Step, env map[string]any) ([]any, error) {
	if s.Loop.In == nil {
		return s.Loop.Items, nil
	}
	v, err := s.Loop.In.Eval(env)
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
