package engine

import (
	"time"

	"playbook/interpreter/spec"
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
// again as written.
func (r *Run) readsStubs(err error) bool {
	return expr.IsTruncatedRead(err) && r.truncatedReadsAllowed != nil && !r.truncatedReadsAllowed()
}

// Stubs is how an evaluation reads stubs (values over their budget):
// Guard when what it reads holds one, so that reading past one is an
// error (expr.Guarded); Old tells, after such an error, whether the run
// reads past a stub as runs from before "truncated-reads" did, and the
// evaluation is made again as written. The zero Stubs evaluates as
// written.
type Stubs struct {
	Guard bool
	Old   func(error) bool
}

// safety is the expr.Safety that applies s.
func (s Stubs) safety() expr.Safety {
	if s.Guard {
		return expr.Guarded
	}
	return 0
}

// asWritten tells, after err of an evaluation under s, whether it is made
// again as written.
func (s Stubs) asWritten(err error) bool {
	return s.Guard && s.Old != nil && s.Old(err)
}

// read evaluates (renders) under s: eval under s's rules, then, after a
// read past a stub that the run reads as runs before "truncated-reads"
// did, again as written.
func read[T any](s Stubs, eval func(expr.Safety) (T, error)) (T, error) {
	v, err := eval(s.safety())
	if s.asWritten(err) {
		v, err = eval(0)
	}
	return v, err
}

// stubsFor is how the run evaluates exprs: guarded when one of them
// reads a step whose result holds a stub, or a workload that does.
func (r *Run) stubsFor(exprs []*expr.Expr) Stubs {
	return Stubs{Guard: r.readsAStub(exprs), Old: r.readsStubs}
}

// LoopStubs is how a loop step's elements, rendered by the workflow,
// read stubs (RenderElement): guarded also when its list (loop.in, whose
// items the iterator holds) reads a stub.
func (r *Run) LoopStubs(s *spec.Step) Stubs {
	return r.stubsFor(append(r.toolReads(s), s.Loop.In))
}

// readsAStub tells whether one of exprs reads a step whose result holds
// a stub, or a workload that holds one.
func (r *Run) readsAStub(exprs []*expr.Expr) bool {
	for _, e := range exprs {
		if e == nil {
			continue
		}
		if (len(e.WorkloadRefs) > 0 || e.ReadsAll["workload"]) && r.workloadStub() {
			return true
		}
		if e.ReadsTrigger && expr.HoldsStub(r.trigger, stubDepth) {
			// An upstream run's aggregate (trigger.result) is bounded.
			return true
		}
		if e.ReadsAll["steps"] {
			//workflowcheck:ignore order-free: whether any step's result holds a stub
			for name := range r.states {
				if r.stubbed(name) {
					return true
				}
			}
			continue
		}
		for _, name := range e.StepRefs {
			if r.stubbed(name) {
				return true
			}
		}
	}
	return false
}

// stubDepth is how deep in a value a stub is looked for: a sub-playbook's
// result holds its steps' (result.steps.NAME.result.json).
const stubDepth = 8

// stubbed tells whether step name's result holds a stub, found once per
// result (a result is set with a new status).
func (r *Run) stubbed(name string) bool {
	st := r.states[name]
	if st == nil || (st.Result == nil && st.Error == nil) {
		return false
	}
	seen := stepSeen{st.Status, st.Attempts, st.Error}
	if c, ok := r.stubCache[name]; ok && c.seen == seen {
		return c.stub
	}
	if r.stubCache == nil {
		r.stubCache = map[string]stubSeen{}
	}
	// Its error's details too: a retry_when's last result is there.
	stub := expr.HoldsStub(st.Result, stubDepth) || (st.Error != nil && expr.HoldsStub(st.Error.Details, stubDepth))
	r.stubCache[name] = stubSeen{seen, stub}
	return stub
}

// stubSeen is whether a step's result, as seen, holds a stub.
type stubSeen struct {
	seen stepSeen
	stub bool
}

// workloadStub tells whether the run's workload holds a stub (a
// sub-playbook's, given a parent's value that was cut).
func (r *Run) workloadStub() bool {
	if r.workloadHasStub == nil {
		has := expr.HoldsStub(r.workload, stubDepth)
		r.workloadHasStub = &has
	}
	return *r.workloadHasStub
}

// ConcurrencyKey renders the run's concurrency key (it reads the
// workload), reading past a stub as the run does.
func (r *Run) ConcurrencyKey(c *spec.Concurrency) (string, error) {
	env := r.Env()
	return read(Stubs{Guard: r.workloadStub(), Old: r.readsStubs}, func(s expr.Safety) (string, error) { return c.RenderKeyWith(env, s) })
}

// render renders a value's templates, whose expressions are exprs,
// against env, reading past a stub as the run does.
func (r *Run) render(v any, env map[string]any, exprs []*expr.Expr) (any, error) {
	return read(r.stubsFor(exprs), func(s expr.Safety) (any, error) { return expr.RenderValueWith(v, r.pb.Templates(), env, s) })
}

// evalBool evaluates a condition; an ordering that meets a null is false
// and a field of null is null, each when the run allows it
// (WithNullSafeComparisons, WithNullSafeMembers). Each rule is asked for
// only when the evaluation without it fails for want of it.
func (r *Run) evalBool(e *expr.Expr, env map[string]any) (bool, error) {
	stubs := r.stubsFor([]*expr.Expr{e})
	safety := stubs.safety()
	for {
		ok, err := e.EvalBoolWith(env, safety)
		if safety&expr.Guarded != 0 && stubs.asWritten(err) {
			safety &^= expr.Guarded
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
