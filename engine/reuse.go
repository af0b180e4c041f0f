package engine

import (
	"fmt"

	"playbook/contract"
	"playbook/spec"
)

// ReusableSteps picks, from an earlier run's steps, those a retry reuses:
// every completed (or reused) step, but, when from names a step, not that
// step nor anything downstream of it, and not a step with an upstream that
// runs again (a cleanup with on_failure: run after a failed step runs again
// after it).
func ReusableSteps(p *spec.Playbook, earlier map[string]*contract.StepState, from string) (map[string]*contract.StepState, error) {
	rerun := map[string]bool{}
	if from != "" {
		if p.Step(from) == nil || from == spec.EndStep {
			return nil, fmt.Errorf("no step %q to retry from in playbook %s", from, p.Name)
		}
		for _, n := range p.Downstream(from) {
			rerun[n] = true
		}
	}
	out := map[string]*contract.StepState{}
	for _, s := range p.Steps {
		prev := earlier[s.Name]
		if s.Name != spec.EndStep && !rerun[s.Name] && prev != nil && (prev.Status == contract.StatusCompleted || prev.Status == contract.StatusReused) {
			out[s.Name] = prev
		}
	}
	// A step no branch led to (skipped, no failure behind it) stays so.
	// Every other step not reused runs again, and so does every reused
	// step downstream of one: one walk along the arcs drops them.
	var again []string
	for _, s := range p.Steps {
		prev := earlier[s.Name]
		if out[s.Name] == nil && (prev == nil || prev.Status != contract.StatusSkipped || prev.OriginalFailedStep != nil) {
			again = append(again, s.Name)
		}
	}
	for len(again) > 0 {
		n := again[len(again)-1]
		again = again[:len(again)-1]
		for _, a := range p.Outgoing(n) {
			if out[a.To] != nil {
				delete(out, a.To)
				again = append(again, a.To)
			}
		}
	}
	return out, nil
}
