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
	return localAttempts(ctx, s, in, id, nil)
}

// localAttempts runs startLocal's attempts in a coroutine of their own,
// first waiting the delay an attempt before them asked for (wait), when
// there is one.
func localAttempts(ctx workflow.Context, s *spec.Step, in contract.StepInput, id string, wait *contract.FailureDetails) workflow.Future {
	f, settle := workflow.NewFuture(ctx)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			if d := wait; d != nil {
				timer := workflow.NewTimerWithOptions(ctx, d.RetryAfter, workflow.TimerOptions{Summary: fmt.Sprintf("%s of %s in %s", LocalRetryTimer, in.Step, d.RetryAfter)})
				if timer.Get(ctx, nil) != nil {
					settle.Set(contract.Outcome{Err: &contract.StepError{Type: contract.ErrCancelled, Message: "the step was cancelled while it waited to retry"},
						Attempts: d.Attempts, AttemptErrors: d.AttemptErrors}, nil)
					return
				}
				in.Local = &contract.LocalAttempts{Before: d.Attempts, Failed: d.AttemptErrors, Since: in.Local.Since}
			}
			o, later := localResult(ctx, executeLocal(ctx, s, in, id), s, in)
			if later == nil {
				settle.Set(o, nil)
				return
			}
			wait = later
		}
	})
	return f
}

// executeLocal schedules one local activity of a local step's attempts.
func executeLocal(ctx workflow.Context, s *spec.Step, in contract.StepInput, id string) workflow.Future {
	opts := localActivityOptions(s, in)
	if id != "" {
		opts.Summary = id
	}
	return workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, opts), contract.RunStepName, in)
}

// localResult reads a finished local activity of a step's attempts: their
// outcome, or the retry delay it left to the run (later, nil when none).
func localResult(ctx workflow.Context, f workflow.Future, s *spec.Step, in contract.StepInput) (o contract.Outcome, later *contract.FailureDetails) {
	var out contract.StepOutput
	err := f.Get(ctx, &out)
	if d, ok := retryLater(err); ok {
		return contract.Outcome{}, &d
	}
	return resultOutcome(ctx, out, err, s, in), nil
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

// element is a loop element's attempts in flight: what startElement
// started, read by outcome once f is ready.
type element struct {
	// ctx is the context the element started in, which the loop cancels.
	ctx workflow.Context
	f   workflow.Future
	s   *spec.Step
	in  contract.StepInput
	id  string
	// direct: f is the element's first local activity, scheduled from the
	// loop's own coroutine (changeLocalElements).
	direct bool
}

// startElement starts a loop element's attempts (id: its activity ID) as
// the step says. With direct, a local element's first local activity is
// scheduled without a coroutine of its own: the SDK's dispatcher wakes
// every coroutine of the workflow each time a local activity ends, and a
// coroutine for each of 200 elements in flight (besides the SDK's own)
// made that a third of the CPU of a process running the server and the
// worker (docs/INTERNALS.md, Local steps). One is started only when an
// attempt leaves its retry to the run (outcome).
func startElement(ctx workflow.Context, s *spec.Step, in contract.StepInput, id string, direct bool) *element {
	e := &element{ctx: ctx, s: s, in: in, id: id}
	if !s.Local || !direct {
		e.f = startAttempts(ctx, s, in, id)
		return e
	}
	e.in.Local = &contract.LocalAttempts{Since: workflow.Now(ctx)}
	e.f, e.direct = executeLocal(ctx, s, e.in, id), true
	return e
}

// outcome reads the element's ready future. When its first local activity
// ended with a retry delay too long to wait in the worker, the element has
// not ended (done is false): its next attempts run as startLocal's do, in
// a coroutine that waits the delay first, and f is now their future.
func (e *element) outcome(ctx workflow.Context) (o contract.Outcome, done bool) {
	if !e.direct {
		return attemptsOutcome(ctx, e.f, e.s, e.in), true
	}
	o, later := localResult(ctx, e.f, e.s, e.in)
	if later == nil {
		return o, true
	}
	e.f, e.direct = localAttempts(e.ctx, e.s, e.in, e.id, later), false
	return contract.Outcome{}, false
}

// awaitOn adds the element to a loop's wait (add), where fn gets its
// outcome once it has ended: an element whose attempt left its retry to a
// timer is added again, with its next attempts' future.
func (e *element) awaitOn(ctx workflow.Context, add func(workflow.Future, func(workflow.Future)), fn func(contract.Outcome)) {
	var ended func(workflow.Future)
	ended = func(workflow.Future) {
		o, done := e.outcome(ctx)
		if !done {
			add(e.f, ended)
			return
		}
		fn(o)
	}
	add(e.f, ended)
}

// directElements asks, once a loop starts its first local element, whether
// its elements' local activities are scheduled directly
// (changeLocalElements): a loop of activities records no marker.
type directElements struct{ asked, direct bool }

func (d *directElements) of(ctx workflow.Context, s *spec.Step) bool {
	if s.Local && !d.asked {
		d.asked, d.direct = true, version(ctx, changeLocalElements) >= 1
	}
	return d.direct
}
