package engine

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
