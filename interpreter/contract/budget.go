package contract

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
)

// What the workflow writes to its history is bounded here, beside the
// history contract. Temporal refuses a payload over 2 MiB (its default):
// the SDK fails the workflow task that tries to write one, again on every
// attempt (the run hangs), or the server terminates the run (`end` never
// runs). So every payload stays under a budget by construction: a value
// over its budget is replaced by a stub that says how big it was and where
// the full value is (Truncated), or the step that would write it fails.
const (
	// PayloadBudget bounds one payload the workflow writes: an activity's
	// or a child's input, a loop batch's outcomes. (A step's result, which
	// its activity writes, has the activity's own bound: activities.)
	PayloadBudget = 1 << 20
	// AggregateBudget bounds the run's aggregate: the workflow's result or
	// failure details, and what the webhook is sent.
	AggregateBudget = 3 << 19
)

// A run whose workers keep large values in its store (Input.LargeValues:
// every payload over 256 KiB goes to the store and the history keeps a
// claim, internal/claims) has no history limit to keep under: its bounds
// are what a worker holds in memory.
const (
	// LargeValueBudget bounds one value of such a run: a step's result or
	// input, a sub-playbook's input.
	LargeValueBudget = 64 << 20
	// LargeAggregateBudget bounds its aggregate.
	LargeAggregateBudget = 256 << 20
)

// Budgets are a run's bounds on what it writes: one payload, the aggregate.
type Budgets struct{ Payload, Aggregate int }

// BudgetsFor are the bounds of a run whose large values are kept in its
// store (large) or in its history.
func BudgetsFor(large bool) Budgets {
	if large {
		return Budgets{Payload: LargeValueBudget, Aggregate: LargeAggregateBudget}
	}
	return Budgets{Payload: PayloadBudget, Aggregate: AggregateBudget}
}

// EncodedSize is the size of v as the workflow's payloads encode it (JSON),
// or an error when JSON cannot carry it (NaN, an infinity, a channel).
func EncodedSize(v any) (int, error) {
	b, err := json.Marshal(v)
	return len(b), err
}

// CheckPayload says why v cannot be written to the run's history as one
// payload (what: "the input of step x"): JSON cannot carry it, or it is
// over PayloadBudget. nil when it can.
func CheckPayload(what string, v any) *StepError {
	return BudgetsFor(false).Check(what, v)
}

// Check is CheckPayload within b.Payload. A step's input counts as it was
// written before its zero fields were left out (leftOut), so that a run
// recorded then, whose input was just over the budget, replays as it ran.
func (b Budgets) Check(what string, v any) *StepError {
	n, err := EncodedSize(v)
	n += leftOut(v)
	switch {
	case err != nil:
		return &StepError{Type: ErrTemplate, Message: fmt.Sprintf("%s cannot be encoded as JSON: %v", what, err)}
	case n > b.Payload && b.Payload > PayloadBudget:
		return &StepError{Type: ErrInputTooLarge, Message: fmt.Sprintf("%s is %s, over the budget of %s for one value of the run; pass large data through files and give the step their paths",
			what, expr.FormatBytes(n), expr.FormatBytes(b.Payload))}
	case n > b.Payload:
		return &StepError{Type: ErrInputTooLarge, Message: fmt.Sprintf("%s is %s, over the budget of %s for one payload of the run's history; pass large data through files or a store and give the step its path",
			what, expr.FormatBytes(n), expr.FormatBytes(b.Payload))}
	}
	return nil
}

// aggregatePart is one value of a step's entry that may be stubbed.
type aggregatePart struct {
	step, field string
	size        int
}

func BoundAggregate(agg *Aggregate, budget int, fullIn func(step, field string) string) *Aggregate {
	size, err := EncodedSize(agg)
	if err == nil && size <= budget {
		return agg
	}
	out := *agg
	out.Steps = make(map[string]*StepState, len(agg.Steps))
	var parts []aggregatePart
	//workflowcheck:ignore order-free: copies every step; the parts are sorted below
	for name, st := range agg.Steps {
		c := *st
		if st.Error != nil {
			e := *st.Error
			c.Error = &e
		}
		out.Steps[name] = &c
		for _, field := range []string{"result", "details", "attempt_errors"} {
			v := c.part(field)
			if v == nil {
				continue
			}
			n, err := EncodedSize(v)
			if err != nil {
				c.setPart(field, map[string]any{"unencodable": true, "error": err.Error()})
				continue
			}
			parts = append(parts, aggregatePart{name, field, n})
		}
	}
	sort.Slice(parts, func(i, j int) bool {
		a, b := parts[i], parts[j]
		if a.size != b.size {
			return a.size > b.size
		}
		if a.step != b.step {
			return a.step < b.step
		}
		return a.field < b.field
	})
	size, _ = EncodedSize(&out)
	for _, p := range parts {
		if size <= budget {
			break
		}
		stub := expr.Truncated(p.size, budget, fullIn(p.step, p.field))
		n, _ := EncodedSize(stub)
		if n >= p.size {
			continue
		}
		out.Steps[p.step].setPart(p.field, stub)
		size -= p.size - n
	}
	if size <= budget {
		return &out
	}
	out.StepsCompacted = true
	//workflowcheck:ignore order-free: sets each step alike
	for _, st := range out.Steps {
		if routine(st.Status) {
			*st = StepState{Status: st.Status, Attempts: st.Attempts}
		}
	}
	if size, _ = EncodedSize(&out); size <= budget {
		return &out
	}
	// Still over: the routine steps are left out, and counted.
	//workflowcheck:ignore order-free: deletes by a rule of each step alone
	for name, st := range out.Steps {
		if routine(st.Status) && name != spec.EndStep {
			delete(out.Steps, name)
			out.StepsOmitted++
		}
	}
	if size, _ = EncodedSize(&out); size <= budget {
		return &out
	}
	// Thousands of failed steps: their errors keep a line of message, and
	// the list of failed steps its first thousand (the count stays true).
	//workflowcheck:ignore order-free: sets each step alike
	for _, st := range out.Steps {
		st.AttemptErrors = nil
		if st.Error != nil {
			st.Error = &StepError{Type: st.Error.Type, Message: Cut(expr.FirstLine(st.Error.Message), 200)}
		}
	}
	if len(out.FailedSteps) > 1000 {
		out.FailedSteps = out.FailedSteps[:1000]
	}
	if size, _ = EncodedSize(&out); size <= budget {
		return &out
	}
	// Last: the entries of end and of the first hundred failed steps stay.
	keep := map[string]bool{spec.EndStep: true}
	for _, name := range out.FailedSteps[:min(100, len(out.FailedSteps))] {
		keep[name] = true
	}
	//workflowcheck:ignore order-free: deletes by a rule of each step alone
	for name := range out.Steps {
		if !keep[name] {
			delete(out.Steps, name)
			out.StepsOmitted++
		}
	}
	return &out
}

// Cut shortens s to at most n bytes, saying so.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// routine tells whether a step with this status needs no more than its
// status said about it when the aggregate is short of room.
func routine(s Status) bool {
	return s == StatusCompleted || s == StatusReused || s == StatusSkipped
}

func (st *StepState) part(field string) any {
	switch field {
	case "result":
		return st.Result
	case "details":
		if st.Error != nil {
			return st.Error.Details
		}
	case "attempt_errors":
		if len(st.AttemptErrors) > 0 {
			return st.AttemptErrors
		}
	}
	return nil
}

func (st *StepState) setPart(field string, v any) {
	switch field {
	case "result":
		st.Result = v
	case "details":
		st.Error.Details = v
	case "attempt_errors":
		// The list keeps its type: one record says what was dropped.
		st.AttemptErrors = []AttemptRecord{{Error: StepError{Type: "truncated",
			Message: fmt.Sprintf("%d attempt records dropped from the aggregate", len(st.AttemptErrors)), Details: v}}}
	}
}

// Reusable is what `playbook retry` may reuse of an earlier run's
// aggregate: the step entries whose result it carries whole. A result that
// is or holds a stub is not the step's result, and an aggregate whose
// entries were compacted lost the results and taken arcs of its routine
// steps: those steps run again.
func Reusable(agg *Aggregate) map[string]*StepState {
	if agg.StepsCompacted || agg.StepsOmitted > 0 {
		return nil
	}
	out := make(map[string]*StepState, len(agg.Steps))
	for name, st := range agg.Steps {
		if _, stub := expr.FindStub(st.Result, "", 6); stub == nil {
			out[name] = st
		}
	}
	return out
}

// BoundOutcomes keeps a loop batch's outcomes (a run from before the loop
// driver) within one payload: the largest results become stubs, largest
// first, until the results take at most three quarters of PayloadBudget
// (the rest is for errors and attempt records).
func BoundOutcomes(outcomes []Outcome) []Outcome {
	if CheckPayload("", outcomes) == nil {
		return outcomes
	}
	type sized struct{ i, n int }
	var all []sized
	total := 0
	for i, o := range outcomes {
		n, _ := EncodedSize(o.Result)
		all = append(all, sized{i, n})
		total += n
	}
	slices.SortStableFunc(all, func(a, b sized) int { return b.n - a.n })
	for _, e := range all {
		if total <= PayloadBudget*3/4 {
			break
		}
		outcomes[e.i].Result = expr.Truncated(e.n, PayloadBudget, "the element's activity completion in the batch's history")
		total -= e.n
	}
	return outcomes
}

// leftOut is how many bytes longer v's JSON was before a step's input left
// out its zero fields (base_dir, timeout and the retry block's first five),
// for a StepInput and a LoopInput, which holds one; 0 for any other value.
func leftOut(v any) int {
	switch v := v.(type) {
	case StepInput:
		return v.leftOut()
	case *StepInput:
		return v.leftOut()
	case LoopInput:
		return v.Common.leftOut()
	case *LoopInput:
		return v.Common.leftOut()
	}
	return 0
}

// leftOut counts each zero field left out: its name, its zero value and
// a comma.
func (in *StepInput) leftOut() int {
	n := 0
	if in.BaseDir == "" {
		n += len(`"base_dir":"",`)
	}
	if in.Timeout == 0 {
		n += len(`"timeout":0,`)
	}
	r, zeros := in.Retry, 0
	for _, f := range []struct {
		zero bool
		size int
	}{
		{r.MaxAttempts == 0, len(`"max_attempts":0,`)},
		{r.InitialDelay == 0, len(`"initial_delay":0,`)},
		{r.Multiplier == 0, len(`"backoff_multiplier":0,`)},
		{r.MaxDelay == 0, len(`"max_delay":0,`)},
		{!r.Jitter, len(`"jitter":false,`)},
	} {
		if f.zero {
			n += f.size
			zeros++
		}
	}
	if zeros == 5 && r.RetryWhen == nil && r.StopWhen == nil && r.MaxDuration == 0 {
		n-- // {} where there were five fields and four commas
	}
	return n
}
