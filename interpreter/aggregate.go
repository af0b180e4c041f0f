package interpreter

import "fmt"

// Webhook returns the event name and the rendered webhook URL for the
// run's outcome; the URL is empty when the playbook names none.
func (r *Run) Webhook(status string) (event, url string, err error) {
	switch status {
	case RunCompleted:
		event, url = "on_success", r.pb.Notify.OnSuccess
	case RunFailed:
		event, url = "on_failure", r.pb.Notify.OnFailure
	}
	if !IsTemplate(url) {
		return event, url, nil
	}
	t, err := CompileTemplate(url, ScopeEnd)
	if err != nil {
		return event, "", err
	}
	v, err := t.Render(r.EndEnv())
	return event, Text(v), err
}

// Finish lets `end` decide the run once every other step has resolved.
// endResult/endErr are the outcome of end's own tool (both nil without one);
// a failed end tool fails the run. Otherwise success_when decides, or, when
// there is none, the run succeeds iff no step failed.
func (r *Run) Finish(endResult any, endErr *StepError, endAttempts int) *Aggregate {
	end := r.pb.End()
	env := r.EndEnv()
	failed := env["failed_steps"].([]string)
	success := len(failed) == 0
	if endErr == nil && end.SuccessWhen != nil {
		ok, err := end.SuccessWhen.EvalBool(env)
		if err != nil {
			endErr = &StepError{Type: ErrExpression, Message: "success_when " + err.Error()}
		}
		success = ok
	}
	st := r.states[EndStep]
	st.Attempts = endAttempts
	r.ended(st)
	if endErr != nil {
		st.Status, st.Error, success = StatusFailed, endErr, false
	} else {
		st.Status, st.Result = StatusCompleted, endResult
	}
	status := RunFailed
	switch {
	case r.Cancelled():
		// A cancelled run ends cancelled whatever success_when would say.
		status = RunCancelled
	case success:
		status = RunCompleted
	}
	r.emit(Event{Type: "end_evaluated", Step: EndStep, Error: endErr,
		Message: fmt.Sprintf("%d of %d %s failed; run %s", len(failed), len(r.pb.Steps)-1, plural(len(r.pb.Steps)-1, "step"), status),
		Data:    map[string]any{"evaluated_by_end_step": true, "total_steps": len(r.pb.Steps) - 1, "failed_steps_count": len(failed), "status": status}})
	// playbook_* is end's verdict; workflow_* is the engine's workflow ending
	// with it. A cancelled run has no verdict, only the workflow's end.
	if status != RunCancelled {
		r.emit(Event{Type: "playbook_" + status})
	}
	r.emit(Event{Type: "workflow_" + status})
	r.final = &Aggregate{
		Playbook:           r.pb.Name,
		Status:             status,
		EvaluatedByEndStep: true,
		TotalSteps:         len(r.pb.Steps) - 1,
		FailedStepsCount:   len(failed),
		FailedSteps:        failed,
		Steps:              r.states,
		CancelReason:       r.CancelReason(),
		Origin:             r.origin,
	}
	return r.final
}

// Snapshot is the run's aggregate so far: status running until `end` has
// decided, then the final aggregate.
func (r *Run) Snapshot() *Aggregate {
	if r.final != nil {
		return r.final
	}
	failed := r.failedSteps()
	return &Aggregate{
		Playbook:         r.pb.Name,
		Status:           RunRunning,
		TotalSteps:       len(r.pb.Steps) - 1,
		FailedStepsCount: len(failed),
		FailedSteps:      failed,
		Steps:            r.states,
		CancelReason:     r.CancelReason(),
		Origin:           r.origin,
	}
}

// plural is noun for one, nouns for any other count.
func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}
