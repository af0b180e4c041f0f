package engine

import (
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// WithDeadline gives the run its deadline: the playbook's timeout after
// its start, or the one its parent carried down, whichever is earlier
// (the workflow decides which, and sets the timer).
func WithDeadline(d contract.Deadline) RunOption {
	return func(r *Run) { r.deadline = &d }
}

// RunDeadline is a run's deadline: its playbook's timeout from now, or
// the deadline its parent carried down (inherited), whichever is earlier;
// nil when neither is set, so that a run without a timeout has no timer.
// run is the run's workflow ID, which a deadline it sets records.
func RunDeadline(pb *spec.Playbook, now time.Time, run string, inherited *contract.Deadline) *contract.Deadline {
	d := inherited
	if pb.Timeout > 0 {
		own := contract.Deadline{At: now.Add(pb.Timeout), Timeout: pb.Timeout.String(), SetBy: run}
		if d == nil || own.At.Before(d.At) {
			d = &own
		}
	}
	return d
}

// TimeOut records that the run's deadline passed: running steps are to be
// cancelled (ToCancel; a sub-playbook, which inherited the deadline, ends
// by it on its own, and a cleanup step is never cancelled), pending ones
// skip, steps waiting for a classification are cancelled, then the
// cleanup steps run, then `end`. A deadline that passes after a cancel or
// a drain still cancels what runs, but the run ends cancelled: the first
// of them decides the outcome (Finish).
func (r *Run) TimeOut() {
	if r.timedOut || r.deadline == nil {
		return
	}
	r.timedOut = true
	r.deadlineFirst = !r.Cancelled()
	t := r.timeoutRecord()
	msg := t.String() + ": running steps are cancelled, the rest skipped"
	if !r.deadlineFirst {
		msg = t.String() + " while the run wound down: running steps are cancelled"
	}
	r.emit(Event{Type: "deadline_passed", Message: msg, Data: map[string]any{"timeout": t.After, "on_timeout": t.OnTimeout}})
	for _, s := range r.pb.Steps {
		if r.states[s.Name].Status == contract.StatusPendingFailed {
			r.cancel(s.Name, &contract.StepError{Type: contract.ErrTimeout, Message: t.String() + " while the step waited for a classification"}, 0)
		}
	}
}

// TimedOut tells whether the run's deadline has passed.
func (r *Run) TimedOut() bool { return r.timedOut }

// timeoutRecord is what the aggregate says of the deadline.
func (r *Run) timeoutRecord() *contract.RunTimeout {
	t := &contract.RunTimeout{After: r.deadline.Timeout, OnTimeout: string(r.pb.OnTimeout), Deadline: r.deadline.At.UTC().Format(time.RFC3339Nano)}
	if r.deadline.SetBy != r.executionID {
		t.SetBy = r.deadline.SetBy
	}
	return t
}

// deadlineError is the error of a step the deadline cancelled.
func (r *Run) deadlineError() *contract.StepError {
	return &contract.StepError{Type: contract.ErrTimeout, Message: r.timeoutRecord().String()}
}

// windingDown tells whether a cancel, a drain or the deadline stopped the
// run: no step starts but cleanup steps (on_cancel: run).
func (r *Run) windingDown() bool { return r.cancelled || r.drained || r.timedOut }

// cleanupMayStart tells whether a cleanup step may start while the run
// winds down: once every other step has settled (a cancelled step has
// ended, a drained one finished, none waits for a classification).
func (r *Run) cleanupMayStart() bool { return r.rd.othersUnsettled == 0 }

// notCancelledByDeadline are the steps the deadline leaves running: a
// sub-playbook carries the deadline and winds down by it itself.
func notCancelledByDeadline(s *spec.Step) bool {
	return s.Tool != nil && s.Tool.Kind == "playbook" && s.Loop == nil
}

// childEndedByDeadline tells whether a sub-playbook step's error is its
// child's having wound down by this run's deadline, which it inherited,
// and then records the deadline as passed here too (below):
// the step is then cancelled by the deadline like the steps the run
// cancelled itself, the child's aggregate in its error's details.
//
// The child's timer and this run's are set for the same instant, so the
// child's end may reach this run before its own timer does: the deadline
// has then passed here too, and is recorded first (both come from the
// history, so a replay takes the same turn).
func (r *Run) childEndedByDeadline(err *contract.StepError) bool {
	if r.deadline == nil || (err.Type != contract.ErrPlaybookFailed && err.Type != contract.ErrCancelled) {
		return false
	}
	child, _ := err.Details.(map[string]any)
	timeout, _ := child["timeout"].(map[string]any)
	if timeout == nil || timeout["set_by"] != r.deadline.SetBy {
		return false
	}
	r.TimeOut()
	return true
}
