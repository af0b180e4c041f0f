package playbookwf

import (
	"errors"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// settle records a finished activity in the run.
func (x *executor) settle(s *spec.Step, f workflow.Future) {
	x.run.Settle(s.Name, x.outcome(s, f))
	if s.Tool.Kind == "approval" || s.Tool.Kind == spec.WaitEventKind {
		x.indexStatus()
	}
}

func (x *executor) outcome(s *spec.Step, f workflow.Future) contract.Outcome {
	switch {
	case s.Loop != nil || s.Tool.Kind == spec.FailKind || spec.IsPause(s.Tool.Kind):
		var o contract.Outcome
		_ = f.Get(x.ctx, &o)
		return o
	case s.Tool.Kind == "playbook":
		x.noteChild(s.Name, f)
		return x.childOutcome(f)
	}
	return attemptsOutcome(x.ctx, f, s, x.inputs[s.Name])
}

// activityOutcome reads a finished RunStep activity that was given in.
func activityOutcome(ctx workflow.Context, f workflow.Future, s *spec.Step, in contract.StepInput) contract.Outcome {
	var out contract.StepOutput
	err := f.Get(ctx, &out)
	return resultOutcome(ctx, out, err, s, in)
}

// resultOutcome is the outcome of a RunStep activity, local or not, that
// returned out or err.
func resultOutcome(ctx workflow.Context, out contract.StepOutput, err error, s *spec.Step, in contract.StepInput) contract.Outcome {
	if err != nil {
		return outcomeOf(ctx, err, s, in)
	}
	return contract.Outcome{Result: out.Result, Attempts: out.Attempts, AttemptErrors: out.AttemptErrors, Files: out.Files}
}

// outcomeOf reads a failed activity. An attempt that decided to stop carries
// its structured error, attempt count and history. A timeout the server
// enforced (a lost worker, start-to-close) ended the last attempt the policy
// allowed (with lost_attempts, the last lost attempt it had room for); the
// attempt log of its heartbeats says what came before.
func outcomeOf(ctx workflow.Context, err error, s *spec.Step, in contract.StepInput) contract.Outcome {
	priorAttempts := in.PriorAttempts
	noRule := contract.RecoveryNoHandler
	if s.FailureHandler != nil {
		noRule = contract.RecoveryNoMatchingRule
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		var d contract.FailureDetails
		if appErr.HasDetails() && appErr.Details(&d) == nil {
			return contract.Outcome{Err: &d.Error, Attempts: d.Attempts, Recovery: d.Recovery, AttemptErrors: d.AttemptErrors}
		}
		return contract.Outcome{Err: &contract.StepError{Type: appErr.Type(), Message: appErr.Message()}, Attempts: 1, Recovery: noRule}
	}
	var toErr *temporal.TimeoutError
	if errors.As(err, &toErr) {
		// The server gave the last attempt up: with the policy spent, that
		// was its last allowed attempt.
		var log contract.AttemptLog
		if toErr.HasLastHeartbeatDetails() {
			_ = toErr.LastHeartbeatDetails(&log)
		}
		attempts := max(log.Current-priorAttempts, 1)
		var ae *temporal.ActivityError
		if errors.As(err, &ae) && ae.RetryState() == enumspb.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED {
			if in.Lost != nil && version(ctx, changeLostAttempts) == workflow.DefaultVersion {
				in.Lost = nil // recorded when the policy had no room for lost attempts
			}
			attempts = int(activityOptions(s, in).RetryPolicy.MaximumAttempts)
		}
		last := priorAttempts + attempts
		lost := contract.LostAttempt(last)
		if toErr.TimeoutType() != enumspb.TIMEOUT_TYPE_HEARTBEAT {
			lost.Error, lost.Lost = contract.StepError{Type: contract.ErrExecutionTimeout, Message: toErr.Error()}, false
		}
		failed := contract.WithLostAttempts(append(log.Failed, lost), priorAttempts+1, last)
		return contract.Outcome{Err: &lost.Error, Attempts: attempts, Recovery: noRule, AttemptErrors: failed}
	}
	var canErr *temporal.CanceledError
	if errors.As(err, &canErr) {
		return contract.Outcome{Err: &contract.StepError{Type: contract.ErrCancelled, Message: "the step was cancelled while it ran"}, Attempts: 1}
	}
	return contract.Outcome{Err: &contract.StepError{Type: contract.ErrActivity, Message: err.Error()}, Attempts: 1, Recovery: noRule}
}
