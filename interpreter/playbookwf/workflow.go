// Package playbookwf is the thin Temporal adapter of the engine: one
// generic workflow that asks the pure core which steps are ready and turns
// the answers into activities, then lets `end` decide the run.
package playbookwf

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
	"playbook/interpreter/spec"
)

// The search attributes a run keeps current when its namespace has them
// (contract.SearchAttributes).
var (
	attrPlaybookName   = temporal.NewSearchAttributeKeyKeyword(contract.AttrPlaybookName)
	attrPlaybookStatus = temporal.NewSearchAttributeKeyKeyword(contract.AttrPlaybookStatus)
	attrFailedSteps    = temporal.NewSearchAttributeKeyKeywordList(contract.AttrFailedSteps)
	// attrScheduledStartTime is set by Temporal on a run a schedule started.
	attrScheduledStartTime = temporal.NewSearchAttributeKeyTime(contract.AttrScheduledStartTime)
)

// indexedFailedSteps is what FailedSteps holds once a run has ended. The
// values of an upsert are not compared on replay (only the command's
// type), so runs recorded before the marks replay as they ran.
func indexedFailedSteps(agg *contract.Aggregate) []string {
	out := append([]string{}, agg.FailedSteps...)
	for _, s := range agg.WarningSteps {
		out = append(out, s+contract.WarningMark)
	}
	if agg.Timeout != nil {
		out = append(out, contract.DeadlineMark)
	}
	return out
}

// logicalTime is the time the run stands for: its input's, else the time a
// schedule started it for, else (a run submitted before runs carried one)
// its start. All three are in the history: a replay reads the same.
func logicalTime(ctx workflow.Context, in contract.Input) time.Time {
	if in.LogicalTime != nil {
		return *in.LogicalTime
	}
	if t, ok := workflow.GetTypedSearchAttributes(ctx).GetTime(attrScheduledStartTime); ok {
		return t
	}
	return workflow.GetInfo(ctx).WorkflowStartTime
}

// Playbook is the generic workflow. It returns the aggregate when `end`
// decides the run completed, and a PlaybookFailed application error whose
// details are the aggregate when `end` decides it failed.
func Playbook(ctx workflow.Context, in contract.Input) (*contract.Aggregate, error) {
	pb := parseFrozen(ctx, in)
	info := workflow.GetInfo(ctx)
	lt := logicalTime(ctx, in)
	in.LogicalTime = &lt
	opts := append(runOptions(ctx, pb, in.Workload), engine.WithLogicalTime(lt))
	deadline := runDeadline(ctx, pb, in)
	if deadline != nil {
		opts = append(opts, engine.WithDeadline(*deadline))
	}
	if in.LargeValues {
		opts = append(opts, engine.WithLargeValues())
	}
	if in.Trigger != nil {
		opts = append(opts, engine.WithTrigger(in.Trigger))
	}
	run := engine.NewRun(pb, in.Workload, info.WorkflowExecution.ID, func() time.Time { return workflow.Now(ctx) }, opts...)
	run.Started(in.Origin)
	run.Reuse(in.Reuse)
	if err := registerQueries(ctx, run); err != nil {
		return nil, err
	}
	x := &executor{ctx: ctx, run: run, in: in, info: info, cancels: map[string]workflow.CancelFunc{}, inputs: map[string]contract.StepInput{}, deadline: deadline, approvals: map[string]pendingApproval{}}

	sel := &waitSet{}
	// A classification or a cancel request wakes the loop, which then acts on
	// what changed.
	wake := workflow.NewBufferedChannel(ctx, 1)
	reasons := workflow.GetSignalChannel(ctx, contract.SignalCancelReason)
	sel.AddReceive(wake, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		if ctx.Err() != nil {
			recordCancelReasons(reasons, run)
			run.CancelRun("cancel requested")
		}
	})
	sel.AddReceive(reasons, func(c workflow.ReceiveChannel, _ bool) { recordCancelReasons(c, run) })
	workflow.Go(ctx, func(gctx workflow.Context) {
		gctx.Done().Receive(gctx, nil)
		wake.SendAsync(true)
	})
	// Signals are taken with ReceiveAsync, one a wake as before: any
	// Temporal client can send one, and the SDK drops a payload that does
	// not decode; Receive would then wait for the next, holding the run's
	// loop inside this callback until another came.
	sel.AddReceive(workflow.GetSignalChannel(ctx, contract.SignalLoopProgress), func(c workflow.ReceiveChannel, _ bool) {
		var m contract.LoopProgressSignal
		if c.ReceiveAsync(&m) {
			run.SetLoopProgress(m.Step, m.Progress)
		}
	})
	sel.AddReceive(workflow.GetSignalChannel(ctx, contract.SignalDrain), func(c workflow.ReceiveChannel, _ bool) {
		var reason string
		if c.ReceiveAsync(&reason) {
			run.RecordCancelReason(reason)
			run.Drain()
		}
	})
	if err := registerClassify(ctx, run, wake); err != nil {
		return nil, err
	}
	if err := registerApproval(ctx, x); err != nil {
		return nil, err
	}
	if err := registerEvents(ctx, x); err != nil {
		return nil, err
	}
	if pb.Concurrency != nil && version(ctx, changeConcurrency) >= 1 {
		x.takeSlot(ctx, pb)
	}
	watchDeadline(ctx, sel, run, deadline)
	if !run.Refused() {
		if err := x.drive(ctx, sel); err != nil {
			x.emitRunSpans(nil, err)
			return nil, err
		}
	}
	if ctx.Err() != nil {
		// The run was cancelled: `end` and the webhook still run, outside
		// the cancelled context.
		x.ctx, _ = workflow.NewDisconnectedContext(ctx)
	}
	run.StartEnd()
	var endOutcome contract.Outcome
	if end := pb.End(); end.Tool != nil && !run.Refused() {
		detached := x.detachEnd()
		if f, err := x.start(end); err != nil {
			endOutcome.Err = err
		} else {
			endOutcome = x.outcome(end, f)
		}
		if detached && ctx.Err() != nil {
			// The cancel came while end's tool ran, which it let finish.
			recordCancelReasons(reasons, run)
			run.CancelRun("cancel requested")
		}
	}
	agg := run.Finish(endOutcome.Result, endOutcome.Err, endOutcome.Attempts)
	agg.WorkflowID, agg.RunID = info.WorkflowExecution.ID, info.WorkflowExecution.RunID
	workflow.SetCurrentDetails(ctx, run.DetailsMarkdown())
	if in.Index {
		if err := workflow.UpsertTypedSearchAttributes(x.ctx, attrPlaybookStatus.ValueSet(agg.Status), attrFailedSteps.ValueSet(indexedFailedSteps(agg))); err != nil {
			workflow.GetLogger(ctx).Warn("search attributes not updated", "error", err)
		}
	}
	// What the run writes (its result, the webhook's input) is the
	// aggregate within its budget; queries read the same.
	written := run.Bounded(agg)
	x.notify(written)
	x.awaitWaitingNotices()
	agg.Notifications = written.Notifications
	x.emitRunSpans(agg, nil)
	switch agg.Status {
	case contract.RunCompleted, contract.RunCompletedWithWarnings:
		return written, nil
	case contract.RunCancelled:
		return nil, temporal.NewCanceledError(written)
	}
	msg := fmt.Sprintf("playbook %s failed: %d of %d steps failed", pb.Name, agg.FailedStepsCount, agg.TotalSteps)
	if n := len(agg.FailedSteps); n > 20 {
		msg += fmt.Sprintf(" (%s and %d more)", strings.Join(agg.FailedSteps[:20], ", "), n-20)
	} else if n > 0 {
		msg += " (" + strings.Join(agg.FailedSteps, ", ") + ")"
	}
	if why := run.FirstFailure(); why != "" {
		msg += "; " + why
	}
	return nil, temporal.NewApplicationErrorWithOptions(msg, contract.FailedErrorType, temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{written}})
}

// runDeadline is the run's deadline (engine.RunDeadline), its timeout
// counted from now on the workflow's clock, which a replay reads the
// same; the clock is read only when the playbook has a timeout.
func runDeadline(ctx workflow.Context, pb *spec.Playbook, in contract.Input) *contract.Deadline {
	var now time.Time
	if pb.Timeout > 0 {
		now = workflow.Now(ctx)
	}
	return engine.RunDeadline(pb, now, workflow.GetInfo(ctx).WorkflowExecution.ID, in.Deadline)
}

// watchDeadline starts the deadline's timer, whose firing winds the run
// down (engine.Run.TimeOut); a deadline already past (a sub-playbook
// started late) does so at once. The timer lives in a context of its own,
// so that a cancel request does not cancel it: a deadline that passes
// while a cancel winds the run down still bounds it.
func watchDeadline(ctx workflow.Context, sel *waitSet, run *engine.Run, deadline *contract.Deadline) {
	if deadline == nil {
		return
	}
	left := deadline.At.Sub(workflow.Now(ctx))
	if left <= 0 {
		run.TimeOut()
		return
	}
	tctx, _ := workflow.NewDisconnectedContext(ctx)
	timer := workflow.NewTimerWithOptions(tctx, left, workflow.TimerOptions{Summary: "deadline: timeout " + deadline.Timeout + " of " + deadline.SetBy})
	sel.AddFuture(timer, func(f workflow.Future) {
		if f.Get(tctx, nil) == nil {
			run.TimeOut()
		}
	})
}

// parseFrozen parses the run's frozen playbook. A worker that cannot parse
// it is older than the CLI that validated and submitted it (a key it does
// not know yet): it fails the workflow task, not the run, by panicking
// (the SDK's default panic policy blocks the workflow and retries the task),
// so that the run goes on once a worker that knows the key polls. Its
// expressions that read time zones ask, when first evaluated, whether the
// run looks zones up on the host, as runs did before "embedded-zones".
func parseFrozen(ctx workflow.Context, in contract.Input) *spec.Playbook {
	pb, err := spec.Parse(in.File, []byte(in.Source))
	if err != nil {
		panic(fmt.Sprintf("this worker cannot parse the run's playbook (submitted by a newer playbook? upgrade this worker): %v", err))
	}
	pb.LookUpZonesOnHost(func() bool { return version(ctx, changeEmbeddedZones) == workflow.DefaultVersion })
	return pb
}

// drive runs the steps until `end` is ready: it starts what the engine's
// slots admit (engine.Slots: the policy is the engine's), settles what
// ends, cancels what the engine says to, and otherwise waits on sel (step
// futures, timers, signals, cancellation).
func (x *executor) drive(ctx workflow.Context, sel *waitSet) error {
	run := x.run
	slots := run.NewSlots(maxRunning, x.capsRunning)
	for {
		for fresh := true; fresh; {
			var ready []*spec.Step
			ready, fresh = slots.Ready()
			for _, s := range ready {
				x.pace()
				if !slots.Admit(s) {
					continue
				}
				f, err := x.start(s)
				if err != nil {
					run.Fail(s.Name, err, 0)
					continue
				}
				slots.Started()
				sel.AddFuture(f, func(f workflow.Future) {
					x.settle(s, f)
					if spell, ok := slots.Ended(s.Name); ok {
						timer := workflow.NewTimerWithOptions(ctx, run.Playbook().PendingTimeout, workflow.TimerOptions{Summary: "pending_timeout " + s.Name})
						sel.AddFuture(timer, func(workflow.Future) { slots.PendingTimedOut(s.Name, spell) })
					}
				})
			}
		}
		for _, name := range slots.ToCancel(func(name string) bool { return x.cancels[name] != nil }) {
			x.cancels[name]()
		}
		if run.EndReady() {
			workflow.SetCurrentDetails(ctx, run.DetailsMarkdown())
			x.emitEndedSteps()
			return nil
		}
		if err := slots.Stalled(); err != nil {
			return temporal.NewNonRetryableApplicationError(err.Error(), "InterpreterError", nil)
		}
		x.pace()
		// The step table is rendered when the workflow is about to wait, not
		// after each step that settled without waiting (noop steps).
		// So are the spans of the steps that ended: once per wait.
		if !sel.HasPending() {
			workflow.SetCurrentDetails(ctx, run.DetailsMarkdown())
			x.emitEndedSteps()
		}
		sel.Select(ctx)
	}
}

// startAttributes are the search attributes a run starts with (a client
// starting a run sets the same: runs.StartAttributes).
func startAttributes(name string) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(attrPlaybookName.ValueSet(name), attrPlaybookStatus.ValueSet(contract.RunRunning))
}
