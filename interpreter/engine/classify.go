package engine

import (
	"fmt"
	"time"

	"playbook/interpreter/contract"
)

// Classification actions for a pending_failed step.
const (
	ClassifyRetry = "retry"
	ClassifyFail  = "fail"
	ClassifySkip  = "skip"
)

// PendingStep is a pending_failed step waiting for a classification.
type PendingStep struct {
	Step     string              `json:"step"`
	Since    time.Time           `json:"since"`
	Attempts int                 `json:"attempts"`
	Recovery string              `json:"recovery"`
	Error    *contract.StepError `json:"error"`
}

// Pending lists the steps waiting for a classification, in file order.
func (r *Run) Pending() []PendingStep {
	out := []PendingStep{}
	for _, s := range r.pb.Steps {
		if st := r.states[s.Name]; st.Status == contract.StatusPendingFailed {
			out = append(out, PendingStep{Step: s.Name, Since: st.PendingSince, Attempts: st.Attempts, Recovery: st.Recovery, Error: st.Error})
		}
	}
	return out
}

// CheckClassify tells why a classification cannot apply, or nil.
func (r *Run) CheckClassify(name, action string) error {
	st := r.states[name]
	switch {
	case st == nil:
		return fmt.Errorf("no step %q in playbook %s", name, r.pb.Name)
	case st.Status != contract.StatusPendingFailed:
		return fmt.Errorf("step %q is %s, not pending_failed: only a pending_failed step can be classified", name, st.Status)
	case action != ClassifyRetry && action != ClassifyFail && action != ClassifySkip:
		return fmt.Errorf("action %q: classify a step as retry, fail or skip", action)
	}
	return nil
}

// SkipWithResult classifies a pending_failed step skip with a result
// given by hand: the step completes with that result, as if it had
// produced it, and its next arcs are taken, so the steps after it run and
// read it; by is who classified and reason why.
func (r *Run) SkipWithResult(name, by, reason string, result any) error {
	if err := r.CheckClassify(name, ClassifySkip); err != nil {
		return err
	}
	st := r.states[name]
	st.Classified = ClassifySkip + " with a result by " + by
	data := map[string]any{"action": ClassifySkip, "by": by, "result": result}
	msg := "skip with a result (by " + by + ")"
	if reason != "" {
		st.Classified += ": " + reason
		data["reason"] = reason
		msg += ": " + reason
	}
	r.emit(Event{Type: "step_classified", Step: name, Message: msg, Data: data})
	r.Complete(name, result, st.Attempts-st.PriorAttempts)
	return nil
}

// Classify resolves a pending_failed step: retry runs it again (its attempts
// add up), fail fails it as if no one had waited, skip skips it; by is who
// classified (a person, mcp, or pending_timeout) and reason why, if given.
func (r *Run) Classify(name, action, by, reason string) error {
	if err := r.CheckClassify(name, action); err != nil {
		return err
	}
	st := r.states[name]
	ev := Event{Type: "step_classified", Step: name, Message: action + " (by " + by + ")"}
	st.Classified = action + " by " + by
	if reason != "" {
		ev.Message += ": " + reason
		ev.Data = map[string]any{"action": action, "by": by, "reason": reason}
		st.Classified += ": " + reason
	}
	r.emit(ev)
	switch action {
	case ClassifyRetry:
		st.PriorAttempts, st.Status, st.Error = st.Attempts, contract.StatusPending, nil
	case ClassifyFail:
		st.Attempts -= st.PriorAttempts
		r.Fail(name, st.Error, st.Attempts)
	case ClassifySkip:
		st.Status, st.SkipReason = contract.StatusSkipped, "classified "+st.Classified
		r.emit(Event{Type: "step_skipped", Step: name, Message: st.SkipReason, Data: map[string]any{"reason": st.SkipReason}})
	}
	return nil
}
