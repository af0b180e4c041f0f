// Package playbookwf is the thin Temporal adapter of the engine: one
// generic workflow that asks the pure core which steps are ready and turns
// the answers into activities, then lets `end` decide the run.
package playbookwf

import (
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
	"playbook/interpreter/spec"
)

const (
	// WorkflowName is the workflow type of every run.
	WorkflowName = "Playbook"
	// TaskQueue is the default task queue of workers and runs.
	TaskQueue = "playbook"
	// QueryEvents returns the run's events after a sequence number.
	QueryEvents = "events"
	// QueryState returns the run's aggregate so far.
	QueryState = "state"
	// QueryPending lists the pending_failed steps waiting for a classification.
	QueryPending = "pending"
	// UpdateClassify classifies a pending_failed step: (step, retry|fail|skip,
	// reason, by, result); reason, by and result are optional (older
	// clients send two arguments) and by defaults to "classify". result,
	// JSON text, goes with skip: the step completes with it.
	UpdateClassify = "classify"
	// UpdateApproval decides a waiting approval step: its one argument is
	// a contract.ApprovalDecision, {"step", "decision": approve|reject,
	// "inputs", "by", "reason"}.
	UpdateApproval = "approval"
	// QueryApprovals lists the approval steps waiting for a decision.
	QueryApprovals = "approvals"
	// SignalDrain lets running steps finish and starts no new one.
	SignalDrain = "drain"
	// SignalCancelReason records why the run is being cancelled; a client
	// sends it just before its cancel request (see cancel.go).
	SignalCancelReason = "cancel_reason"
	// SignalLoopProgress carries a loop driver's progress to its run
	// (LoopProgressSignal), every few seconds of the driver's time.
	SignalLoopProgress = "loop_progress"
	// FailedErrorType is the application error type of a failed run.
	FailedErrorType = "PlaybookFailed"
)

// The search attributes a run keeps current when its namespace has them
// (`playbook dev` registers them, `playbook setup` does on a cluster).
var (
	AttrPlaybookName   = temporal.NewSearchAttributeKeyKeyword("PlaybookName")
	AttrPlaybookStatus = temporal.NewSearchAttributeKeyKeyword("PlaybookStatus")
	AttrFailedSteps    = temporal.NewSearchAttributeKeyKeywordList("FailedSteps")
)

// Besides the failed steps, a run's FailedSteps holds, once it has ended,
// each step that failed with allow_failure as "NAME (warning)" and
// DeadlineMark when its own deadline passed: `list` shows warnings and a
// deadline without opening each run, and `list --status timed_out` finds
// the runs failed by their deadline. A step name holds no space or
// parenthesis, so no entry can be taken for another.
const (
	WarningMark  = " (warning)"
	DeadlineMark = "(deadline)"
)

// indexedFailedSteps is what FailedSteps holds once a run has ended. The
// values of an upsert are not compared on replay (only the command's
// type), so runs recorded before the marks replay as they ran.
func indexedFailedSteps(agg *contract.Aggregate) []string {
	out := append([]string{}, agg.FailedSteps...)
	for _, s := range agg.WarningSteps {
		out = append(out, s+WarningMark)
	}
	if agg.Timeout != nil {
		out = append(out, DeadlineMark)
	}
	return out
}

// SearchAttributes lists the search attributes' names and types.
var SearchAttributes = map[string]enumspb.IndexedValueType{
	AttrPlaybookName.GetName():   enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	AttrPlaybookStatus.GetName(): enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	AttrFailedSteps.GetName():    enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST,
}

// Input is the workflow's input: the playbook frozen as text at submission.
type Input struct {
	// File is the playbook's path as submitted, for messages.
	File string `json:"file"`
	// BaseDir is the playbook's directory where it was submitted.
	BaseDir string `json:"base_dir"`
	// Source is the playbook's text.
	Source string `json:"source"`
	// Workload deep-merges into the playbook's workload defaults.
	Workload map[string]any `json:"workload,omitempty"`
	// Files holds, by absolute path, every sub-playbook of the tree, frozen
	// at submission (see submit.LoadBundle).
	Files map[string]string `json:"files,omitempty"`
	// Index keeps the search attributes current; the submitter sets it when
	// the namespace has them.
	Index bool `json:"index,omitempty"`
	// Reuse holds the completed steps of an earlier run that `playbook retry`
	// does not run again.
	Reuse map[string]*contract.StepState `json:"reuse,omitempty"`
	// ReuseElements holds, by loop step, the elements of an earlier run
	// that `playbook retry` does not run again (the step itself runs).
	ReuseElements map[string]*contract.ElementReuse `json:"reuse_elements,omitempty"`
	// ReuseChildren holds, by sub-playbook step, what `playbook retry`
	// reuses of the step's child in the earlier run: the step runs, and
	// its child is a retry of that child.
	ReuseChildren map[string]*ChildReuse `json:"reuse_children,omitempty"`
	// Origin says which run a retry retried, who asked and why.
	Origin *contract.Origin `json:"origin,omitempty"`
	// LogicalTime is the time the run stands for (run.logical_time): when
	// it was submitted, what `run --logical-time` said, the earlier run's
	// for a retry, the parent's for a sub-playbook. Nil in a run a
	// schedule started, whose time is its scheduled time (logicalTime).
	LogicalTime *time.Time `json:"logical_time,omitempty"`
	// Files digests the files the steps read by name (scripts, recovery
	// scripts, sub-playbooks) as they were at submission, by absolute
	// path: what a retry compares to tell whether they changed.
	FileDigests map[string]string `json:"file_digests,omitempty"`
	// Deadline is the deadline a sub-playbook inherits from its parent
	// run (the parent's playbook timeout, or one it inherited): the child
	// winds down by the earlier of it and its own timeout. Nil for a run
	// submitted by hand, and for a cleanup step's sub-playbook.
	Deadline *contract.Deadline `json:"deadline,omitempty"`
}

// ChildReuse is what a retry reuses of a sub-playbook step's child: as
// Input's fields of the same names, for the child run.
type ChildReuse struct {
	// RetryOf is the earlier run's child.
	RetryOf       string                            `json:"retry_of"`
	Reuse         map[string]*contract.StepState    `json:"reuse,omitempty"`
	ReuseElements map[string]*contract.ElementReuse `json:"reuse_elements,omitempty"`
	ReuseChildren map[string]*ChildReuse            `json:"reuse_children,omitempty"`
}

// AttrScheduledStartTime is the search attribute Temporal sets on a run a
// schedule started (or backfilled): the time it was scheduled for.
var AttrScheduledStartTime = temporal.NewSearchAttributeKeyTime("TemporalScheduledStartTime")

// logicalTime is the time the run stands for: its input's, else the time a
// schedule started it for, else (a run submitted before runs carried one)
// its start. All three are in the history: a replay reads the same.
func logicalTime(ctx workflow.Context, in Input) time.Time {
	if in.LogicalTime != nil {
		return *in.LogicalTime
	}
	if t, ok := workflow.GetTypedSearchAttributes(ctx).GetTime(AttrScheduledStartTime); ok {
		return t
	}
	return workflow.GetInfo(ctx).WorkflowStartTime
}

// StartAttributes are the search attributes a run starts with.
func StartAttributes(name string) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(AttrPlaybookName.ValueSet(name), AttrPlaybookStatus.ValueSet(contract.RunRunning))
}

// Playbook is the generic workflow. It returns the aggregate when `end`
// decides the run completed, and a PlaybookFailed application error whose
// details are the aggregate when `end` decides it failed.
func Playbook(ctx workflow.Context, in Input) (*contract.Aggregate, error) {
	pb := parseFrozen(ctx, in)
	info := workflow.GetInfo(ctx)
	lt := logicalTime(ctx, in)
	in.LogicalTime = &lt
	opts := append(runOptions(ctx, pb, in.Workload), engine.WithLogicalTime(lt))
	deadline := runDeadline(ctx, pb, in)
	if deadline != nil {
		opts = append(opts, engine.WithDeadline(*deadline))
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
	reasons := workflow.GetSignalChannel(ctx, SignalCancelReason)
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
	sel.AddReceive(workflow.GetSignalChannel(ctx, SignalLoopProgress), func(c workflow.ReceiveChannel, _ bool) {
		var m LoopProgressSignal
		c.Receive(ctx, &m)
		run.SetLoopProgress(m.Step, m.Progress)
	})
	sel.AddReceive(workflow.GetSignalChannel(ctx, SignalDrain), func(c workflow.ReceiveChannel, _ bool) {
		var reason string
		c.Receive(ctx, &reason)
		run.RecordCancelReason(reason)
		run.Drain()
	})
	if err := registerClassify(ctx, run, wake); err != nil {
		return nil, err
	}
	if err := registerApproval(ctx, x); err != nil {
		return nil, err
	}
	watchDeadline(ctx, sel, run, deadline)
	if err := x.drive(ctx, sel); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		// The run was cancelled: `end` and the webhook still run, outside
		// the cancelled context.
		x.ctx, _ = workflow.NewDisconnectedContext(ctx)
	}
	run.StartEnd()
	var endOutcome contract.Outcome
	if end := pb.End(); end.Tool != nil {
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
		if err := workflow.UpsertTypedSearchAttributes(x.ctx, AttrPlaybookStatus.ValueSet(agg.Status), AttrFailedSteps.ValueSet(indexedFailedSteps(agg))); err != nil {
			workflow.GetLogger(ctx).Warn("search attributes not updated", "error", err)
		}
	}
	// What the run writes (its result, the webhook's input) is the
	// aggregate within its budget; queries read the same.
	written := run.Bounded(agg)
	x.notify(written)
	x.awaitWaitingNotices()
	agg.Notifications = written.Notifications
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
	return nil, temporal.NewApplicationErrorWithOptions(msg, FailedErrorType, temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{written}})
}

// runDeadline is the run's deadline (engine.RunDeadline), its timeout
// counted from now on the workflow's clock, which a replay reads the
// same; the clock is read only when the playbook has a timeout.
func runDeadline(ctx workflow.Context, pb *spec.Playbook, in Input) *contract.Deadline {
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
func parseFrozen(ctx workflow.Context, in Input) *spec.Playbook {
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
			return nil
		}
		if err := slots.Stalled(); err != nil {
			return temporal.NewNonRetryableApplicationError(err.Error(), "InterpreterError", nil)
		}
		x.pace()
		// The step table is rendered when the workflow is about to wait, not
		// after each step that settled without waiting (noop steps).
		if !sel.HasPending() {
			workflow.SetCurrentDetails(ctx, run.DetailsMarkdown())
		}
		sel.Select(ctx)
	}
}
