package engine

import (
	"time"

	"playbook/spec/expr"
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

// evalBool evaluates a condition; an ordering that meets a null is false
// when the run allows it (WithNullSafeComparisons).
func (r *Run) evalBool(e *expr.Expr, env map[string]any) (bool, error) {
	ok, err := e.EvalBool(env)
	if expr.IsNullComparison(err) && (r.nullSafeAllowed == nil || r.nullSafeAllowed()) {
		return e.EvalBoolNullSafe(env)
	}
	return ok, err
}

// WithLogicalTime sets the time the run stands for, which expressions read
// as run.logical_time (RFC 3339, UTC): a scheduled run's scheduled time, a
// manual run's submission time, or what `run --logical-time` said.
func WithLogicalTime(t time.Time) RunOption {
	return func(r *Run) { r.logicalTime = t.UTC().Format(time.RFC3339) }
}

// LogicalTime is the run's run.logical_time, "" when none was set.
func (r *Run) LogicalTime() string { return r.logicalTime }
