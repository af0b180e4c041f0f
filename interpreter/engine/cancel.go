package engine

import (
	"fmt"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// cancel records a step whose activity stopped on a cancellation: it routes
// to `end` like a failure, but does not count as one.
func (r *Run) cancel(name string, err *contract.StepError, attempts int) {
	st := r.states[name]
	st.Status, st.Result, st.Error, st.Attempts = contract.StatusCancelled, nil, err, st.PriorAttempts+attempts
	st.RoutedToEnd = true
	r.ended(st)
	if r.stoppedBy != "" {
		origin := r.stoppedBy
		st.OriginalFailedStep = &origin
	}
	r.emit(Event{Type: "step_cancelled", Step: name, Attempts: st.Attempts, Message: err.Message})
}

// CancelRun records a cancel request from outside: running steps are to be
// cancelled (see ToCancel), pending ones skip, steps waiting for a
// classification are cancelled, and the run ends cancelled after `end`.
func (r *Run) CancelRun(reason string) {
	if r.cancelled {
		return
	}
	r.cancelled = true
	r.emit(r.withReason(Event{Type: "cancel_requested", Message: reason}))
	for _, s := range r.pb.Steps {
		if r.states[s.Name].Status == contract.StatusPendingFailed {
			r.cancel(s.Name, &contract.StepError{Type: contract.ErrCancelled, Message: "the run was cancelled while the step waited for a classification"}, 0)
		}
	}
}

// RecordCancelReason keeps why the run is being cancelled: a client sends
// it (signal cancel_reason) before its cancel request, which workflow code
// cannot read a reason from. Empty reasons are ignored. A signal reaches
// the history before the run sees it, so the run cannot refuse one; a
// reason over contract.MaxDecisionBytes (which playbook's own clients
// refuse to send) is kept as a line that says so, never whole: it would
// go into every event and the run's result.
func (r *Run) RecordCancelReason(reason string) {
	if len(reason) > contract.MaxDecisionBytes {
		reason = fmt.Sprintf("(a reason of %d bytes was sent, over the limit of %d (256 KiB) on what is sent to a run: it was not kept)", len(reason), contract.MaxDecisionBytes)
	}
	if reason != "" {
		r.cancelReason = reason
	}
}

// CancelReason is why the run was cancelled or drained, if it was (before
// its deadline passed) and someone said.
func (r *Run) CancelReason() string {
	if !r.Cancelled() || r.deadlineFirst {
		return ""
	}
	return r.cancelReason
}

func (r *Run) withReason(e Event) Event {
	if r.cancelReason != "" {
		e.Message += ": " + r.cancelReason
		e.Data = map[string]any{"cancel_reason": r.cancelReason}
	}
	return e
}

// Drain starts no new step; running steps finish; the run ends cancelled.
func (r *Run) Drain() {
	if !r.drained {
		r.drained = true
		r.emit(r.withReason(Event{Type: "drain_requested", Message: "running steps finish; no new step starts"}))
	}
}

// Cancelled tells whether the run was cancelled or drained.
func (r *Run) Cancelled() bool { return r.cancelled || r.drained }

// WindingDown says why the run winds down (contract.WindingDownCancel,
// Drain or Deadline), as it does now: a cancel after a drain cancels the
// running steps, a deadline that came first stays the reason; "" while
// it does not.
func (r *Run) WindingDown() string {
	switch {
	case r.timedOut && r.deadlineFirst:
		return contract.WindingDownDeadline
	case r.cancelled:
		return contract.WindingDownCancel
	case r.drained:
		return contract.WindingDownDrain
	case r.timedOut:
		return contract.WindingDownDeadline
	}
	return ""
}

// ToCancel lists the running steps to cancel now: all of them after a
// cancel request, all but sub-playbooks (which end by the deadline they
// inherited) once the run's deadline passed, and under failure_mode cancel
// after a failure all but those with on_failure: run. A cleanup step
// (on_cancel: run) is never listed. Each step is listed once.
func (r *Run) ToCancel() []string {
	all := r.cancelled || r.timedOut
	if !all && (r.pb.FailureMode != spec.FailureCancel || r.stoppedBy == "") {
		return nil
	}
	var out []string
	for _, s := range r.pb.Steps {
		if r.states[s.Name].Status != contract.StatusRunning || r.cancelling[s.Name] || s.OnCancelRun || (!all && s.OnFailureRun) {
			continue
		}
		deadline := r.timedOut && !r.cancelled
		if deadline && notCancelledByDeadline(s) {
			continue
		}
		r.cancelling[s.Name] = true
		r.byDeadline[s.Name] = deadline
		out = append(out, s.Name)
	}
	return out
}

// Withdraw tells whether a step Ready handed out, and that the workflow
// has not started yet (it waits for a slot, see playbookwf's maxRunning),
// may no longer start: the run was cancelled or drained since, or a
// failure stopped it. Such a step is skipped, as Ready would have skipped
// it then.
func (r *Run) Withdraw(s *spec.Step) bool {
	var reason, origin string
	switch {
	case s.OnCancelRun && r.windingDown():
		return false // a cleanup step runs after a cancel too
	case r.deadlineFirst:
		reason = r.timeoutRecord().String()
	case r.cancelled:
		reason = "run cancelled"
	case r.drained:
		reason = "run drained: no new step starts"
	case r.stoppedBy != "" && !s.OnFailureRun:
		reason, origin = fmt.Sprintf("not started: %s failed and failure_mode is %s", r.stoppedBy, r.pb.FailureMode), r.stoppedBy
	default:
		return false
	}
	st := r.states[s.Name]
	st.StartedAt = nil
	r.resolve(s, st, false, reason, origin)
	return true
}
