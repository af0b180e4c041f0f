package engine

import "time"

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

// WithLogicalTime sets the time the run stands for, which expressions read
// as run.logical_time (RFC 3339, UTC): a scheduled run's scheduled time, a
// manual run's submission time, or what `run --logical-time` said.
func WithLogicalTime(t time.Time) RunOption {
	return func(r *Run) { r.logicalTime = t.UTC().Format(time.RFC3339) }
}

// LogicalTime is the run's run.logical_time, "" when none was set.
func (r *Run) LogicalTime() string { return r.logicalTime }
