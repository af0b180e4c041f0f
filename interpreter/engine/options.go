package engine

import (
	"time"

	"playbook/interpreter/spec/expr"
)

// RunOption changes how a Run decides, for runs started before a change to
// the engine (the workflow learns which through workflow.GetVersion; see
// docs/VERSIONING.md). A new run takes none.
type RunOption func(*Run)

// WithShallowWorkload makes overrides replace workload defaults key by key,
// as runs did before overrides deep-merged (version "workload-deep-merge").
func WithShallowWorkload() RunOption { return func(r *Run) { r.shallowWorkload = true } }

// WithFirstArcOnly counts, between two steps joined both by a `next` and a
// `depends_on`, only the arc declared first in the file, as runs did before
// arcs were kept per kind (version "arcs-per-kind").
func WithFirstArcOnly() RunOption { return func(r *Run) { r.firstArcOnly = true } }

// WithNullSafeComparisons asks, the first time a condition the run
// evaluates (when, success_when) orders a null (`status_code >= 500` with
// no status), whether such an ordering is false, as in runs since the
// change "null-safe-compare", or an expression_error, as in runs before
// it. The workflow asks through workflow.GetVersion at that point only.
// Without it (tests, tools) the ordering is false.
func WithNullSafeComparisons(allowed func() bool) RunOption {
	return func(r *Run) { r.nullSafeAllowed = allowed }
}

// WithNullSafeMembers asks, the first time a condition the run evaluates
// takes a field or an index of null (`steps.x.error.type` when x did not
// fail), whether it is null, as in runs since the change
// "null-safe-member", or an expression_error, as in runs before it.
// Without it (tests, tools) it is null.
func WithNullSafeMembers(allowed func() bool) RunOption {
	return func(r *Run) { r.nullMemberAllowed = allowed }
}

// WithCancelledFailsAtOnce asks, the first time a step fails with no
// rule to handle it after the run was cancelled (use_pending_failed),
// whether it fails at once, as in runs since the change
// "cancelled-fails-at-once", or waits in pending_failed for a
// classification, as in runs before it (and the cancelled run waited for
// a person). Without it (tests, tools) it fails at once.
func WithCancelledFailsAtOnce(allowed func() bool) RunOption {
	return func(r *Run) { r.cancelledFailsAllowed = allowed }
}

// WithTruncatedReads asks, the first time an expression or a template of
// the run reads past a stub (a value over its budget: a field it has not,
// an index, its length), or inputs.from names a step whose files were not
// kept with its truncated result, whether that is an error, as in runs
// since the change "truncated-reads", or reads the stub, as in runs
// before it (null for a field, 4 for a length, no files). Without it
// (tests, tools) it is an error.
func WithTruncatedReads(allowed func() bool) RunOption {
	return func(r *Run) { r.truncatedReadsAllowed = allowed }
}

// readsStubs tells, after err, whether the run reads past a stub as runs
// from before "truncated-reads" did: the render or evaluation is made
// again under expr.Unguarded.
func (r *Run) readsStubs(err error) bool {
	return expr.IsTruncatedRead(err) && r.truncatedReadsAllowed != nil && !r.truncatedReadsAllowed()
}

// ReadsStubs is readsStubs, for the loops a workflow renders itself
// (engine.RenderElement).
func (r *Run) ReadsStubs(err error) bool { return r.readsStubs(err) }

// render renders a value's templates against env, reading past a stub as
// the run does (readsStubs).
func (r *Run) render(v any, env map[string]any) (any, error) {
	out, err := expr.RenderValue(v, r.pb.Templates(), env)
	if r.readsStubs(err) {
		out, err = expr.RenderValueWith(v, r.pb.Templates(), env, expr.Unguarded)
	}
	return out, err
}

// evalBool evaluates a condition; an ordering that meets a null is false
// and a field of null is null, each when the run allows it
// (WithNullSafeComparisons, WithNullSafeMembers). Each rule is asked for
// only when the evaluation without it fails for want of it.
func (r *Run) evalBool(e *expr.Expr, env map[string]any) (bool, error) {
	var safety expr.Safety
	for {
		ok, err := e.EvalBoolWith(env, safety)
		if safety&expr.Unguarded == 0 && r.readsStubs(err) {
			safety |= expr.Unguarded
			continue
		}
		need := expr.Needs(err)
		if need == 0 || safety&need != 0 || (need == expr.NullMembers && e.ReadsTruncated(env)) || !r.allows(need) {
			return ok, err
		}
		safety |= need
	}
}

// allows tells whether the run applies a null-safety rule.
func (r *Run) allows(s expr.Safety) bool {
	allowed := r.nullSafeAllowed
	if s == expr.NullMembers {
		allowed = r.nullMemberAllowed
	}
	return allowed == nil || allowed()
}

// WithLogicalTime sets the time the run stands for, which expressions read
// as run.logical_time (RFC 3339, UTC): a scheduled run's scheduled time, a
// manual run's submission time, or what `run --logical-time` said.
func WithLogicalTime(t time.Time) RunOption {
	return func(r *Run) { r.logicalTime = t.UTC().Format(time.RFC3339) }
}

// WithTrigger sets what started the run, which expressions read as
// trigger.* (contract.Input.Trigger).
func WithTrigger(t map[string]any) RunOption {
	return func(r *Run) { r.trigger = t }
}

// LogicalTime is the run's run.logical_time, "" when none was set.
func (r *Run) LogicalTime() string { return r.logicalTime }

// WithLargeValues bounds the run's aggregate by contract.BudgetsFor(true):
// its workers keep large values in its store (contract.Input.LargeValues).
func WithLargeValues() RunOption { return func(r *Run) { r.largeValues = true } }
