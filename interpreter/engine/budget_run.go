package engine

import (
	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// Bounded returns the aggregate as the run writes it: agg itself when it
// fits its budget (AggregateBudget; LargeAggregateBudget WithLargeValues), else a copy whose largest step results, error
// details and attempt lists (largest first, then by step name) are stubs,
// until it fits. A value JSON cannot carry is always stubbed. When even
// that is not enough (tens of thousands of steps), the entries of steps
// that completed, were reused or skipped keep only status and attempts
// (StepsCompacted), and then are left out (counted in StepsOmitted); past
// that, errors keep their type and first line, and at last only end and
// the first hundred failed steps keep an entry.
func (r *Run) Bounded(agg *contract.Aggregate) *contract.Aggregate {
	return contract.BoundAggregate(agg, contract.BudgetsFor(r.largeValues).Aggregate, r.fullIn)
}

// fullIn says where the whole value of a step's field is kept when the
// aggregate carries a stub for it.
func (r *Run) fullIn(step, field string) string {
	s := r.pb.Step(step)
	switch {
	case field == "attempt_errors":
		return "the run's events (playbook events RUN) and its history (playbook history RUN)"
	case s == nil || s.Tool == nil:
		return "the run's history"
	case s.Tool.Kind == "playbook":
		return "the sub-playbook's own run (its child workflow's result)"
	case s.Tool.Kind == spec.FailKind:
		return "nowhere: a fail step's error is made in the workflow from the playbook's text; render its message and details from what they read"
	case s.Tool.Kind == "approval" && field == "result":
		return "the approval Update in the run's history (playbook history RUN): the inputs the person gave, over the defaults the playbook declares"
	case s.Tool.Kind == "wait" && field == "result":
		return "nowhere: a wait step's result is made in the workflow from its timer"
	case s.Tool.Kind == "noop" && field == "result":
		return "nowhere: a noop step's result is computed in the workflow; read the step it copies"
	case s.Loop != nil:
		return "each element's activity completion: in the run's history (playbook history RUN) for a loop of up to 500 elements, else in its driver's (workflow RUN." + step + ".loop)"
	}
	return "the step's activity completion in the run's history (playbook history RUN) and its attempt logs (playbook logs RUN " + step + ")"
}
