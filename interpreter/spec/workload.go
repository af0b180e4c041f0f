package spec

// MergeWorkload deep-merges overrides into a playbook's workload defaults:
// a map given for a map merges key by key, at every depth; any other value
// (a list, a scalar, null) replaces the default. Neither argument changes.
func MergeWorkload(defaults, overrides map[string]any) map[string]any {
	out := make(map[string]any, len(defaults)+len(overrides))
	//workflowcheck:ignore order-free: fills a map
	for k, v := range defaults {
		out[k] = v
	}
	//workflowcheck:ignore order-free: sets each key alike
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
	//workflowcheck:ignore order-free: whether any key merges: the same answer in any order
	for k, v := range overrides {
		_, isMap := v.(map[string]any)
		_, defIsMap := defaults[k].(map[string]any)
		if isMap && defIsMap {
			return true
		}
	}
	return false
}
