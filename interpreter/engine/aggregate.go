package engine

import (
	"fmt"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
)

// Webhook returns the event name and the rendered webhook URL for the
// run's outcome; the URL is empty when the playbook names none.
func (r *Run) Webhook(status string) (event, url string, err error) {
	switch status {
	case contract.RunCompleted, contract.RunCompletedWithWarnings:
		event, url = "on_success", r.pb.Notify.OnSuccess
	case contract.RunFailed:
		event, url = "on_failure", r.pb.Notify.OnFailure
	}
	url, err = r.renderWebhook(url)
	return event, url, err
}

// renderWebhook renders a webhook's URL in end's scope, when a template
// builds it.
func (r *Run) renderWebhook(url string) (string, error) {
	if !expr.IsTemplate(url) {
		return url, nil
	}
	t, err := expr.CompileTemplate(url, expr.ScopeEnd)
	if err != nil {
		return "", err
	}
	if onHost := r.pb.ZonesOnHost(); onHost != nil {
		for _, e := range t.Exprs() {
			e.LookUpZonesOnHost(onHost)
		}
	}
	env := r.EndEnv()
	v, err := read(r.stubsFor(t.Exprs()), func(s expr.Safety) (any, error) { return t.RenderWith(env, s) })
	return expr.Text(v), err
}

// Finish lets `end` decide the run once every other step has resolved.
// endResult/endErr are the outcome of end's own tool (both nil without one);
// a failed end tool fails the run. Otherwise success_when decides, or, when
// there is none, the run succeeds iff no step failed but those with
// allow_failure. A run that succeeds while such steps failed is
// completed_with_warnings.
func (r *Run) Finish(endResult any, endErr *contract.StepError, endAttempts int) *contract.Aggregate {
	end := r.pb.End()
	env := r.EndEnv()
	failed := env["failed_steps"].([]string)
	warnings := env["warning_steps"].([]string)
	success := len(failed) == 0
	if endErr == nil && end.SuccessWhen != nil {
		ok, err := r.evalBool(end.SuccessWhen, env)
		if err != nil {
			endErr = &contract.StepError{Type: contract.ErrExpression, Message: "success_when " + err.Error()}
		}
		success = ok
	}
	st := r.states[spec.EndStep]
	st.Attempts = endAttempts
	r.ended(st)
	if endErr != nil {
		st.Status, st.Error, success = contract.StatusFailed, endErr, false
	} else {
		st.Status, st.Result = contract.StatusCompleted, endResult
	}
	status := contract.RunFailed
	switch {
	case r.refused != "":
		// Refused by its concurrency limit: nothing ran, and it failed.
	case r.Cancelled() && !r.deadlineFirst:
		// A cancelled run ends cancelled whatever success_when would say.
		status = contract.RunCancelled
	case r.timedOut && (r.pb.OnTimeout == spec.TimeoutFail || end.SuccessWhen == nil):
		// Past its deadline only a success_when may accept the run, and
		// not under on_timeout: fail.
	case success && len(warnings) > 0:
		status = contract.RunCompletedWithWarnings
	case success:
		status = contract.RunCompleted
	}
	msg := fmt.Sprintf("%d of %d %s failed", len(failed), len(r.pb.Steps)-1, plural(len(r.pb.Steps)-1, "step"))
	data := map[string]any{"evaluated_by_end_step": true, "total_steps": len(r.pb.Steps) - 1, "failed_steps_count": len(failed), "status": status}
	if len(warnings) > 0 {
		msg += fmt.Sprintf(", %d allowed to fail", len(warnings))
		data["warning_steps_count"] = len(warnings)
	}
	if r.timedOut {
		msg += "; " + r.timeoutRecord().String()
	}
	r.emit(Event{Type: "end_evaluated", Step: spec.EndStep, Error: endErr, Message: msg + "; run " + status, Data: data})
	// playbook_* is end's verdict; workflow_* is the engine's workflow ending
	// with it. A cancelled run has no verdict, only the workflow's end.
	if status != contract.RunCancelled {
		r.emit(Event{Type: "playbook_" + status})
	}
	r.emit(Event{Type: "workflow_" + status})
	r.final = r.aggregate(status, failed, warnings)
	r.final.EvaluatedByEndStep = true
	return r.final
}

// Snapshot is the run's aggregate so far: its OpenStatus until `end` has
// decided, then the final aggregate.
func (r *Run) Snapshot() *contract.Aggregate {
	if r.final != nil {
		return r.final
	}
	return r.aggregate(r.OpenStatus(), r.failedSteps(), r.warningSteps())
}

// OpenStatus is the status of the run before `end` decides: queued while
// it waits for a slot of its concurrency key, waiting while a step waits
// for a person or an event, running otherwise.
func (r *Run) OpenStatus() string {
	switch {
	case r.queued != nil:
		return contract.RunQueued
	case r.WaitsForPerson():
		return contract.RunWaiting
	}
	return contract.RunRunning
}

// aggregate is the run's aggregate with this status and these failed and
// warning steps.
func (r *Run) aggregate(status string, failed, warnings []string) *contract.Aggregate {
	return &contract.Aggregate{
		Playbook:          r.pb.Name,
		Status:            status,
		TotalSteps:        len(r.pb.Steps) - 1,
		FailedStepsCount:  len(failed),
		FailedSteps:       failed,
		WarningSteps:      warnings,
		WarningStepsCount: len(warnings),
		Steps:             r.states,
		CancelReason:      r.CancelReason(),
		Timeout:           r.timeoutSoFar(),
		Origin:            r.origin,
		LogicalTime:       r.logicalTime,
		Queued:            r.queued,
		Refused:           r.refused,
	}
}

// plural is noun for one, nouns for any other count.
func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// FirstFailure says, in one line, which step failed first in file order
// and why ("transform: exit_code: exited with code 3: disk full"), or ""
// when none did: what a failed run's message and its Web UI details lead
// with, so that the first view of a failed run names its cause. A step
// allowed to fail is named only when no other step failed (a success_when
// that reads warning_steps failed the run).
//
// A run its deadline failed leads with that ("the run's deadline of 3s
// passed (on_timeout: cancel)"), then the first failed step, if any.
func (r *Run) FirstFailure() string {
	if r.refused != "" {
		return r.refused
	}
	if r.timedOut && r.deadlineFirst {
		t := r.timeoutRecord()
		why := fmt.Sprintf("%s (on_timeout: %s)", t, t.OnTimeout)
		if step := r.firstFailedStep(); step != "" {
			why += "; " + step
		}
		return contract.Cut(why, 300)
	}
	return r.firstFailedStep()
}

func (r *Run) firstFailedStep() string {
	for _, allowed := range []bool{false, true} {
		for i, s := range r.pb.Steps {
			if st := r.ordered[i]; s.AllowFailure == allowed && st.Status == contract.StatusFailed && st.Error != nil {
				return contract.Cut(s.Name+": "+st.Error.Type+": "+expr.FirstLine(st.Error.Message), 300)
			}
		}
	}
	return ""
}

// timeoutSoFar is the aggregate's record of the deadline, nil until it passed.
func (r *Run) timeoutSoFar() *contract.RunTimeout {
	if !r.timedOut {
		return nil
	}
	return r.timeoutRecord()
}
