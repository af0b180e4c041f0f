package interpreter

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

// MergeWorkload deep-merges overrides into a playbook's workload defaults:
// a map given for a map merges key by key, at every depth; any other value
// (a list, a scalar, null) replaces the default. Neither argument changes.
func MergeWorkload(defaults, overrides map[string]any) map[string]any {
	out := make(map[string]any, len(defaults)+len(overrides))
	for k, v := range defaults {
		out[k] = v
	}
	for k, v := range overrides {
		over, isMap := v.(map[string]any)
		def, defIsMap := out[k].(map[string]any)
		if isMap && defIsMap {
			v = MergeWorkload(def, over)
		}
		out[k] = v
	}
	return out
}

// MergesDeep tells whether deep-merging overrides into the defaults gives
// another workload than replacing them key by key: whether some override is
// a map given for a map.
func MergesDeep(defaults, overrides map[string]any) bool {
	for k, v := range overrides {
		_, isMap := v.(map[string]any)
		_, defIsMap := defaults[k].(map[string]any)
		if isMap && defIsMap {
			return true
		}
	}
	return false
}

// HasArcsOfBothKinds tells whether two steps are joined both by a `next`
// and by a `depends_on`, where WithFirstArcOnly decides differently.
func (p *Playbook) HasArcsOfBothKinds() bool {
	for _, arcs := range p.incoming {
		from := map[string]bool{}
		for _, a := range arcs {
			if from[a.From] {
				return true
			}
			from[a.From] = true
		}
	}
	return false
}
