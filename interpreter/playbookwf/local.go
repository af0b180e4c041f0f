package playbookwf

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// LocalRetryTimer begins the summary of the timer a local step waits
// before its next local activity. Its length is the attempt's retry
// delay, recorded in the local activity's marker, as an activity's own
// retry delays are decided where it ran: `playbook test`'s determinism
// check does not compare it (nor the SDK's own timers between local
// retries in the SDK's test environment, summarised "Sleep").
const LocalRetryTimer = "local retry"

// localGrace lets a local step's attempt that hit its own timeout kill its
// process group and report before the SDK's start-to-close timeout would
// end it: the attempt's timeout plus this stays within the 8s after which
// the SDK renews the workflow task (spec.LocalTimeoutBound).
const localGrace = 2 * time.Second

// localActivityOptions derive a local step's local activity options from
// its retry block, as activityOptions do an activity's, less the attempts
// its earlier local activities made (LocalAttempts.Before), and with no
// room for lost attempts: a lost local attempt is run again by the
// workflow task's retry, which no policy counts.
func localActivityOptions(s *spec.Step, in contract.StepInput) workflow.LocalActivityOptions {
	o := activityOptions(s, in)
	policy := o.RetryPolicy
	policy.MaximumAttempts = max(policy.MaximumAttempts-int32(in.Local.Before), 1)
	return workflow.LocalActivityOptions{
		// The retry block bounds the attempts, not a clock: without it the
		// SDK would stop retrying at the first attempt's start-to-close.
		ScheduleToCloseTimeout: noTimeout,
		StartToCloseTimeout:    s.Timeout + localGrace,
		RetryPolicy:            policy,
		Summary:                o.Summary,
	}
}

// startLocal runs a local step's attempts (or a loop element's, named id)
// as local activities, and returns a future of its contract.Outcome.
// Temporal retries an attempt within the local activity, in the worker,
// while the retry delay is at most spec.LocalRetryWithin; a longer delay
// ends the local activity (FailureDetails.RetryAfter), and the run waits
// it on a timer, as the SDK does past the workflow task's timeout, then
// starts the next local activity with the attempts so far.
func startLocal(ctx workflow.Context, s *spec.Step, in contract.StepInput, id string) workflow.Future {
	in.Local = &contract.LocalAttempts{Since: workflow.Now(ctx)}
	f, settle := workflow.NewFuture(ctx)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			opts := localActivityOptions(s, in)
			if id != "" {
				opts.Summary = id
			}
			var out contract.StepOutput
			err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, opts), contract.RunStepName, in).Get(ctx, &out)
			d, later := retryLater(err)
			if !later {
				settle.Set(resultOutcome(ctx, out, err, s, in), nil)
				return
			}
			timer := workflow.NewTimerWithOptions(ctx, d.RetryAfter, workflow.TimerOptions{Summary: fmt.Sprintf("%s of %s in %s", LocalRetryTimer, in.Step, d.RetryAfter)})
			if timer.Get(ctx, nil) != nil {
				settle.Set(contract.Outcome{Err: &contract.StepError{Type: contract.ErrCancelled, Message: "the step was cancelled while it waited to retry"},
					Attempts: d.Attempts, AttemptErrors: d.AttemptErrors}, nil)
				return
			}
			in.Local = &contract.LocalAttempts{Before: d.Attempts, Failed: d.AttemptErrors, Since: in.Local.Since}
		}
	})
	return f
}

// retryLater reads a local activity's failure that leaves its retry to
// the run: a delay too long to wait in the worker.
func retryLater(err error) (contract.FailureDetails, bool) {
	var appErr *temporal.ApplicationError
	var d contract.FailureDetails
	if errors.As(err, &appErr) && appErr.HasDetails() && appErr.Details(&d) == nil && d.RetryAfter > 0 {
		return d, true
	}
	return d, false
}

// startAttempts starts a step's attempts, or a loop element's (id: its
// activity ID), as the step says: an activity, or local activities.
// attemptsOutcome reads what they came to.
func startAttempts(ctx workflow.Context, s *spec.Step, in contract.StepInput, id string) workflow.Future {
	if s.Local {
		return startLocal(ctx, s, in, id)
	}
	opts := activityOptions(s, in)
	if id != "" {
		opts.ActivityID, opts.Summary = id, id
	}
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), contract.RunStepName, in)
}

// attemptsOutcome reads a finished startAttempts.
func attemptsOutcome(ctx workflow.Context, f workflow.Future, s *spec.Step, in contract.StepInput) contract.Outcome {
	if s.Local {
		var o contract.Outcome
		_ = f.Get(ctx, &o)
		return o
	}
	return activityOutcome(ctx, f, s, in)
}
