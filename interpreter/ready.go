package interpreter

import (
	"fmt"
)

// Ready resolves every pending step whose predecessors have all resolved:
// each is either skipped (and skipping propagates) or marked running and
// returned, in file order, for the caller to start. `end` is never returned;
// see EndReady.
func (r *Run) Ready() []*Step {
	var ready []*Step
	for changed := true; changed; {
		changed = false
		for i, s := range r.pb.Steps {
			st := r.ordered[i]
			if s.Name == EndStep || st.Status != StatusPending {
				continue
			}
			run, resolved, reason, origin := r.decide(s)
			if !resolved {
				continue
			}
			changed = true
			if run {
				st.Status = StatusRunning
				r.started(st)
				r.emit(Event{Type: "step_started", Step: s.Name})
				ready = append(ready, s)
				continue
			}
			st.Status = StatusSkipped
			st.SkipReason = reason
			r.ended(st)
			if origin != "" {
				st.OriginalFailedStep = &origin
			}
			r.emit(Event{Type: "step_skipped", Step: s.Name, Message: reason, Data: map[string]any{"reason": reason}})
		}
	}
	return ready
}

// decide tells whether a pending step can be resolved now, and if so whether
// it runs; a skip comes with its reason and the failed step behind it.
func (r *Run) decide(s *Step) (run, resolved bool, reason, origin string) {
	arcs := r.pb.incoming[s.Name]
	taken := len(arcs) == 0
	counted := map[string]bool{}
	for _, a := range arcs {
		if r.firstArcOnly && counted[a.From] {
			continue
		}
		counted[a.From] = true
		p := r.states[a.From]
		if !p.Status.Terminal() {
			return false, false, "", ""
		}
		switch {
		case p.Status == StatusFailed || p.Status == StatusCancelled:
			if origin == "" {
				origin = a.From
				reason = fmt.Sprintf("upstream %s %s", a.From, p.Status)
			}
		case p.Status == StatusSkipped && p.OriginalFailedStep != nil:
			if origin == "" {
				origin = *p.OriginalFailedStep
				reason = fmt.Sprintf("upstream %s skipped after %s failed", a.From, origin)
			}
		case r.taken[a]:
			taken = true
		}
	}
	switch {
	case r.cancelled:
		return false, true, "run cancelled", ""
	case r.drained:
		return false, true, "run drained: no new step starts", ""
	case origin != "" && s.OnFailureRun:
		return true, true, "", ""
	case origin != "":
		return false, true, reason, origin
	case !taken:
		return false, true, "no branch led here", ""
	case r.stoppedBy != "" && !s.OnFailureRun:
		return false, true, fmt.Sprintf("not started: %s failed and failure_mode is %s", r.stoppedBy, r.pb.FailureMode), r.stoppedBy
	}
	return true, true, "", ""
}

// EndReady tells whether every step but `end` has resolved.
func (r *Run) EndReady() bool {
	for i, s := range r.pb.Steps {
		if s.Name != EndStep && !r.ordered[i].Status.Terminal() {
			return false
		}
	}
	return true
}

// StartEnd marks `end` running once everything else has resolved.
func (r *Run) StartEnd() {
	r.states[EndStep].Status = StatusRunning
	r.started(r.states[EndStep])
	r.emit(Event{Type: "step_started", Step: EndStep})
}
