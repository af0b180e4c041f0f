package engine

import (
	"fmt"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// Settle records how a step's activity ended: completed, failed, or, with
// use_pending_failed and a failure no exit-code rule matched, pending_failed.
func (r *Run) Settle(name string, o contract.Outcome) {
	st := r.states[name]
	st.AttemptErrors = append(st.AttemptErrors, o.AttemptErrors...)
	st.Recovery = o.Recovery
	// Attempts are retried inside Temporal's activity retry, out of the
	// workflow's sight; their records arrive with the outcome.
	last := st.PriorAttempts + o.Attempts
	for _, a := range o.AttemptErrors {
		if a.Attempt < last {
			e := a.Error
			msg := fmt.Sprintf("attempt %d failed; attempt %d followed", a.Attempt, a.Attempt+1)
			data := map[string]any{"attempt": a.Attempt, "recovery": a.Recovery}
			if a.RecoveryExitCode != nil {
				msg = fmt.Sprintf("attempt %d failed; its recovery script ran and exited %d; attempt %d followed", a.Attempt, *a.RecoveryExitCode, a.Attempt+1)
				data["recovery_exit_code"] = *a.RecoveryExitCode
			}
			r.emit(Event{Type: "step_retry", Step: name, Attempts: a.Attempt, Error: &e, Message: msg, Data: data})
		}
	}
	if o.Err != nil && o.Err.Type != contract.ErrCancelled && o.Attempts > 1 {
		r.emit(Event{Type: "step_retry_exhausted", Step: name, Attempts: last, Error: o.Err, Message: fmt.Sprintf("no attempt left after %d", last)})
	}
	switch {
	case o.Err == nil:
		st.Files = o.Files
		r.Complete(name, o.Result, o.Attempts)
	case (o.Err.Type == contract.ErrCancelled && r.byDeadline[name]) || r.childEndedByDeadline(o.Err):
		err := r.deadlineError()
		err.Details = o.Err.Details
		r.cancel(name, err, o.Attempts)
	case o.Err.Type == contract.ErrCancelled:
		r.cancel(name, o.Err, o.Attempts)
	case r.pb.UsePendingFailed && (o.Recovery == contract.RecoveryNoHandler || o.Recovery == contract.RecoveryNoMatchingRule) && !r.windsDownWithout(name):
		st.Status, st.Error, st.Result = contract.StatusPendingFailed, o.Err, nil
		st.Attempts = st.PriorAttempts + o.Attempts
		st.PendingSince = r.now()
		r.ended(st)
		r.emit(Event{Type: "step_pending_failed", Step: name, Attempts: st.Attempts, Error: o.Err, Message: "waiting for a classification: retry, fail or skip"})
	default:
		r.Fail(name, o.Err, o.Attempts)
	}
}

// windsDownWithout tells whether a step that fails now fails at once
// rather than wait in pending_failed: past the run's deadline (nothing
// would end the wait but a person, and the deadline bounds the run), a
// cleanup step while the run winds down (the cancel or drain that started
// it has cancelled what waited already), and any step once the run was
// cancelled (its cancel cancelled what waited then; one that fails after,
// a loop whose element had failed, would keep the cancelled run open
// until a person came: see WithCancelledFailsAtOnce).
func (r *Run) windsDownWithout(name string) bool {
	return r.timedOut || (r.pb.Step(name).OnCancelRun && r.windingDown()) ||
		(r.cancelled && (r.cancelledFailsAllowed == nil || r.cancelledFailsAllowed()))
}

// Complete records a step's result and takes its outgoing arcs: every plain
// `next` and `depends_on` arc, and of the when/else items the first that holds.
// A `when` that cannot be evaluated fails the step.
func (r *Run) Complete(name string, result any, attempts int) {
	st := r.states[name]
	st.Status, st.Result, st.Attempts, st.Error = contract.StatusCompleted, result, st.PriorAttempts+attempts, nil
	attempts = st.Attempts
	r.ended(st)
	taken, err := r.nextTargets(name)
	if err != nil {
		r.Fail(name, &contract.StepError{Type: contract.ErrExpression, Message: "next: when " + err.Error()}, attempts)
		return
	}
	st.TakenNext = taken
	r.takeArcs(name, taken)
	r.emit(Event{Type: "step_completed", Step: name, Attempts: attempts})
}

// nextTargets evaluates a completed step's `next`: every plain target, and
// of the when/else items the first that holds. It is never nil.
func (r *Run) nextTargets(name string) ([]string, error) {
	s := r.pb.Step(name)
	take := []string{}
	var env map[string]any
	for _, rule := range s.Next {
		if rule.When == nil {
			take = append(take, rule.Then...)
			if !rule.Else {
				continue
			}
			break
		}
		if env == nil {
			env = r.Env()
		}
		ok, err := r.evalBool(rule.When, env)
		if err != nil {
			return nil, err
		}
		if ok {
			take = append(take, rule.Then...)
			break
		}
	}
	return take, nil
}

// takeArcs takes a completed step's outgoing arcs: its `next` arcs to
// targets, and every `depends_on` arc out of it.
func (r *Run) takeArcs(name string, targets []string) {
	for _, to := range targets {
		r.taken[spec.Arc{From: name, To: to, Kind: spec.ArcNext}] = true
	}
	for _, a := range r.pb.Outgoing(name) {
		if a.Kind == spec.ArcDependsOn {
			r.taken[a] = true
		}
	}
}

// Fail records a step whose retries are spent. It routes to `end`; under
// failure_mode stop no new step starts after it. A step with allow_failure
// does neither: see tolerate.
func (r *Run) Fail(name string, err *contract.StepError, attempts int) {
	st := r.states[name]
	st.Status, st.Result, st.Error, st.Attempts = contract.StatusFailed, nil, err, st.PriorAttempts+attempts
	attempts = st.Attempts
	if r.pb.Step(name).AllowFailure {
		r.tolerate(name, st)
		return
	}
	st.RoutedToEnd = true
	st.OriginalFailedStep = &name
	r.ended(st)
	if r.pb.FailureMode != spec.FailureContinue && r.stoppedBy == "" {
		r.stoppedBy = name
	}
	r.emit(Event{Type: "step_failed", Step: name, Attempts: attempts, Error: err, Message: "routed to end",
		Data: map[string]any{"routed_to_end": true, "original_failed_step": name}})
}

// tolerate records the failure of a step with allow_failure as a warning:
// the run goes on as if it had completed. Its `next` is evaluated (its
// conditions read its status and error) and its arcs are taken; failure_mode
// is not triggered. A `next` that does not evaluate takes none of its next
// arcs (its depends_on arcs still are), and the event says why.
func (r *Run) tolerate(name string, st *contract.StepState) {
	st.RoutedToEnd, st.OriginalFailedStep, st.AllowedFailure = false, nil, true
	r.ended(st)
	msg := "allowed to fail: the run goes on"
	taken, err := r.nextTargets(name)
	if err != nil {
		msg += "; next: when " + err.Error() + ": no next step taken"
		taken = []string{}
	}
	st.TakenNext = taken
	r.takeArcs(name, taken)
	r.emit(Event{Type: "step_failed", Step: name, Attempts: st.Attempts, Error: st.Error, Message: msg,
		Data: map[string]any{"allow_failure": true}})
}
