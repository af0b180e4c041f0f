package engine

import (
	"maps"

	"playbook/interpreter/contract"
)

// stepsEnv is the `steps` map expressions see, kept from one call of Env to
// the next so that a step that did not change costs no allocation. The map
// handed out is never written again (a caller may keep it, say in an
// activity's input): a change makes a new map that shares the unchanged
// entries.
type stepsEnv struct {
	steps map[string]any
	// seen is what each entry was built from.
	seen map[string]stepSeen
}

// stepSeen is what a step's entry shows. Result is not in it: a result is
// set only when a step completes (or is reused), and so with a new status.
type stepSeen struct {
	status   contract.Status
	attempts int
	err      *contract.StepError
}

func (r *Run) stepsEnv() map[string]any {
	c := &r.envCache
	var changed []string
	//workflowcheck:ignore order-free: collects the changed steps, each set by name below
	for name, st := range r.states {
		if s, ok := c.seen[name]; !ok || s != (stepSeen{st.Status, st.Attempts, st.Error}) {
			changed = append(changed, name)
		}
	}
	if c.steps != nil && len(changed) == 0 {
		return c.steps
	}
	steps := make(map[string]any, len(r.states))
	maps.Copy(steps, c.steps)
	if c.seen == nil {
		c.seen = make(map[string]stepSeen, len(r.states))
	}
	for _, name := range changed {
		st := r.states[name]
		steps[name] = stepEntry(st)
		c.seen[name] = stepSeen{st.Status, st.Attempts, st.Error}
	}
	c.steps = steps
	return steps
}

// stepEntry is a step's entry in `steps`.
func stepEntry(st *contract.StepState) map[string]any {
	var errVal any
	if st.Error != nil {
		errVal = map[string]any{"type": st.Error.Type, "message": st.Error.Message, "details": st.Error.Details}
	}
	entry := map[string]any{"status": string(st.Status), "result": st.Result, "error": errVal, "attempts": st.Attempts}
	if len(st.Files) > 0 {
		// Only a step that handed files on has the key: a run from before
		// files reads the same entries as it did.
		entry["files"] = contract.FileValues(st.Files)
	}
	return entry
}
