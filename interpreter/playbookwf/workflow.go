// Package playbookwf is the thin Temporal adapter of the interpreter: one
// generic workflow that asks the pure core which steps are ready and turns
// the answers into activities, then lets `end` decide the run.
package playbookwf

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"playbook/activities"
	"playbook/interpreter"
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
	// reason, by); reason and by are optional (older clients send two
	// arguments) and by defaults to "classify".
	UpdateClassify = "classify"
	// SignalDrain lets running steps finish and starts no new one.
	SignalDrain = "drain"
	// SignalCancelReason records why the run is being cancelled; a client
	// sends it just before its cancel request (see cancel.go).
	SignalCancelReason = "cancel_reason"
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

// SearchAttributes lists the search attributes' names and types.
var SearchAttributes = map[string]enumspb.IndexedValueType{
	AttrPlaybookName.GetName():   enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	AttrPlaybookStatus.GetName(): enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	AttrFailedSteps.GetName():    enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST,
}

// noTimeout stands for a step without `timeout`: the attempt may run as
// long as its worker keeps heartbeating.
const noTimeout = 10 * 365 * 24 * time.Hour

// DefaultHeartbeatTimeout is how long a silent worker keeps an attempt when
// the step sets no heartbeat_timeout: workers heartbeat every second, so a
// lost attempt is given up, and retried, within seconds.
const DefaultHeartbeatTimeout = 5 * time.Second

// oldHeartbeatTimeout is the default of activities that carry no lost
// attempts budget (StepInput.Lost): loop batches of runs started before.
const oldHeartbeatTimeout = 30 * time.Second

// lostAttemptsChange versions how a step that timed out on the server is
// read. Since lost attempts are retried apart, a step's activity policy
// leaves room for them (StepInput.Lost); the replayer does not compare
// activity options, so only the reading of the last attempt's number
// changed, and the version is taken there, where a recorded run that timed
// out before the change still reads it as it did.
const lostAttemptsChange = "lost-attempts-retried"

// timeoutGrace lets an attempt that hit its own timeout kill its process and
// report before the server's start-to-close timeout would fire.
const timeoutGrace = 30 * time.Second

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
	// at submission (see interpreter.LoadBundle).
	Files map[string]string `json:"files,omitempty"`
	// Index keeps the search attributes current; the submitter sets it when
	// the namespace has them.
	Index bool `json:"index,omitempty"`
	// Reuse holds the completed steps of an earlier run that `playbook retry`
	// does not run again.
	Reuse map[string]*interpreter.StepState `json:"reuse,omitempty"`
	// Origin says which run a retry retried, who asked and why.
	Origin *interpreter.Origin `json:"origin,omitempty"`
}

// StartAttributes are the search attributes a run starts with.
func StartAttributes(name string) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(AttrPlaybookName.ValueSet(name), AttrPlaybookStatus.ValueSet(interpreter.RunRunning))
}

// Playbook is the generic workflow. It returns the aggregate when `end`
// decides the run completed, and a PlaybookFailed application error whose
// details are the aggregate when `end` decides it failed.
func Playbook(ctx workflow.Context, in Input) (*interpreter.Aggregate, error) {
	pb := parseFrozen(in)
	info := workflow.GetInfo(ctx)
	run := interpreter.NewRun(pb, in.Workload, info.WorkflowExecution.ID, func() time.Time { return workflow.Now(ctx) }, runOptions(ctx, pb, in.Workload)...)
	run.Started(in.Origin)
	run.Reuse(in.Reuse)
	if err := registerQueries(ctx, run); err != nil {
		return nil, err
	}
	x := &executor{ctx: ctx, run: run, in: in, info: info, cancels: map[string]workflow.CancelFunc{}, inputs: map[string]activities.StepInput{}}

	sel := workflow.NewSelector(ctx)
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
	sel.AddReceive(workflow.GetSignalChannel(ctx, SignalDrain), func(c workflow.ReceiveChannel, _ bool) {
		var reason string
		c.Receive(ctx, &reason)
		run.RecordCancelReason(reason)
		run.Drain()
	})
	if err := registerClassify(ctx, run, wake); err != nil {
		return nil, err
	}
	pendingGen := map[string]int{}
	running := 0
	for {
		// The step table is rendered when the workflow is about to wait, not
		// after each of the steps settled together.
		if !sel.HasPending() || run.EndReady() {
			workflow.SetCurrentDetails(ctx, run.DetailsMarkdown())
		}
		for started := true; started; {
			ready := run.Ready()
			started = len(ready) > 0
			for _, s := range ready {
				if s.Tool == nil {
					run.Complete(s.Name, nil, 0)
					continue
				}
				f, err := x.start(s)
				if err != nil {
					run.Fail(s.Name, err, 0)
					continue
				}
				running++
				sel.AddFuture(f, func(f workflow.Future) {
					running--
					x.settle(s, f)
					if run.State(s.Name).Status == interpreter.StatusPendingFailed && pb.PendingTimeout > 0 {
						pendingGen[s.Name]++
						gen := pendingGen[s.Name]
						timer := workflow.NewTimerWithOptions(ctx, pb.PendingTimeout, workflow.TimerOptions{Summary: "pending_timeout " + s.Name})
						sel.AddFuture(timer, func(workflow.Future) {
							if pendingGen[s.Name] == gen && run.State(s.Name).Status == interpreter.StatusPendingFailed {
								_ = run.Classify(s.Name, interpreter.ClassifyFail, "pending_timeout", "")
							}
						})
					}
				})
			}
		}
		for _, name := range run.ToCancel() {
			x.cancels[name]()
		}
		if run.EndReady() {
			break
		}
		if running == 0 && len(run.Pending()) == 0 {
			return nil, temporal.NewNonRetryableApplicationError("interpreter stalled: steps pending with nothing running: "+strings.Join(run.Running(), ","), "InterpreterError", nil)
		}
		sel.Select(ctx)
	}

	if ctx.Err() != nil {
		// The run was cancelled: `end` and the webhook still run, outside
		// the cancelled context.
		x.ctx, _ = workflow.NewDisconnectedContext(ctx)
	}
	run.StartEnd()
	var endOutcome interpreter.Outcome
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
		if err := workflow.UpsertTypedSearchAttributes(x.ctx, AttrPlaybookStatus.ValueSet(agg.Status), AttrFailedSteps.ValueSet(agg.FailedSteps)); err != nil {
			workflow.GetLogger(ctx).Warn("search attributes not updated", "error", err)
		}
	}
	x.notify(agg)
	switch agg.Status {
	case interpreter.RunCompleted:
		return agg, nil
	case interpreter.RunCancelled:
		return nil, temporal.NewCanceledError(agg)
	}
	msg := fmt.Sprintf("playbook %s failed: %d of %d steps failed", pb.Name, agg.FailedStepsCount, agg.TotalSteps)
	if len(agg.FailedSteps) > 0 {
		msg += " (" + strings.Join(agg.FailedSteps, ", ") + ")"
	}
	return nil, temporal.NewApplicationErrorWithOptions(msg, FailedErrorType, temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{agg}})
}

// parseFrozen parses the run's frozen playbook. A worker that cannot parse
// it is older than the CLI that validated and submitted it (a key it does
// not know yet): it fails the workflow task, not the run, by panicking
// (the SDK's default panic policy blocks the workflow and retries the task),
// so that the run goes on once a worker that knows the key polls.
func parseFrozen(in Input) *interpreter.Playbook {
	pb, err := interpreter.Parse(in.File, []byte(in.Source))
	if err != nil {
		panic(fmt.Sprintf("this worker cannot parse the run's playbook (submitted by a newer playbook? upgrade this worker): %v", err))
	}
	return pb
}

func registerQueries(ctx workflow.Context, run *interpreter.Run) error {
	if err := workflow.SetQueryHandler(ctx, QueryEvents, func(after int) ([]interpreter.Event, error) {
		ev := run.Events()
		if after < 0 || after > len(ev) {
			after = 0
		}
		return ev[after:], nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryPending, func() ([]interpreter.PendingStep, error) { return run.Pending(), nil }); err != nil {
		return err
	}
	return workflow.SetQueryHandler(ctx, QueryState, func() (*interpreter.Aggregate, error) { return run.Snapshot(), nil })
}

// registerClassify accepts classifications of pending_failed steps; the
// validator rejects an unknown step, one that is not pending, or an unknown
// action before anything is written to history.
func registerClassify(ctx workflow.Context, run *interpreter.Run, classified workflow.Channel) error {
	return workflow.SetUpdateHandlerWithOptions(ctx, UpdateClassify,
		func(ctx workflow.Context, step, action, reason, by string) (string, error) {
			if by == "" {
				by = "classify"
			}
			if err := run.Classify(step, action, by, reason); err != nil {
				return "", err
			}
			classified.SendAsync(struct{}{})
			return fmt.Sprintf("step %s classified %s: now %s", step, action, run.State(step).Status), nil
		},
		workflow.UpdateHandlerOptions{Validator: func(step, action, _, _ string) error { return run.CheckClassify(step, action) }})
}

// notify posts the aggregate to the webhook for its outcome, as an activity
// Temporal retries; a webhook that keeps failing is recorded in the
// aggregate and does not change the outcome.
func (x *executor) notify(agg *interpreter.Aggregate) {
	event, url, err := x.run.Webhook(agg.Status)
	if err != nil {
		agg.Notifications = append(agg.Notifications, interpreter.Notification{Event: event, Error: "webhook: " + err.Error()})
		return
	}
	if url == "" {
		return
	}
	x.detachEnd()
	ctx := workflow.WithActivityOptions(x.ctx, workflow.ActivityOptions{
		ActivityID:          "notify-" + event,
		Summary:             "notify " + event,
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 500 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second, MaximumAttempts: 4},
	})
	err = workflow.ExecuteActivity(ctx, activities.NotifyName, activities.NotifyInput{Event: event, Webhook: url, Aggregate: agg}).Get(ctx, nil)
	n := interpreter.Notification{Event: event, Webhook: activities.Redact(url), Delivered: err == nil}
	var appErr *temporal.ApplicationError
	switch {
	case errors.As(err, &appErr):
		n.Error = appErr.Message() // the last attempt's own words, without the SDK's wrapping
	case err != nil:
		n.Error = err.Error()
	}
	agg.Notifications = append(agg.Notifications, n)
}

// executor turns the core's decisions into activities.
type executor struct {
	ctx  workflow.Context
	run  *interpreter.Run
	in   Input
	info *workflow.Info
	// cancels holds each started step's cancellation scope.
	cancels map[string]workflow.CancelFunc
	// noopVersion is the noop-in-workflow version, once a noop step asked.
	noopVersion *workflow.Version
	// inputs holds what each step's activity was given, to read its outcome.
	inputs map[string]activities.StepInput
	// endDetached: see detachEnd; nil until asked.
	endDetached *bool
}

// start renders a step's tool and schedules its activity, or its child
// workflow for a sub-playbook, in a cancellation scope of its own.
func (x *executor) start(s *interpreter.Step) (workflow.Future, *interpreter.StepError) {
	ctx, cancel := workflow.WithCancel(x.ctx)
	x.cancels[s.Name] = cancel
	if x.decidesInWorkflow(s) {
		return x.decideInWorkflow(ctx, s)
	}
	if s.Loop != nil {
		// A loop renders its tool once per element.
		return x.startLoop(ctx, s)
	}
	spec, err := x.run.RenderTool(s)
	if err != nil {
		return nil, &interpreter.StepError{Type: "template_error", Message: err.Error()}
	}
	if s.Tool.Kind == "playbook" {
		return x.startChild(ctx, s, spec)
	}
	in := x.stepInput(s, s.Name, spec)
	x.inputs[s.Name] = in
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, activityOptions(s, in)), activities.RunStepName, in), nil
}

// stepInput is what one attempt of a step (or of a loop's element) gets.
func (x *executor) stepInput(s *interpreter.Step, name string, spec map[string]any) activities.StepInput {
	in := activities.StepInput{
		WorkflowID: x.info.WorkflowExecution.ID,
		RunID:      x.info.WorkflowExecution.RunID,
		Step:       name,
		Kind:       s.Tool.Kind,
		Spec:       spec,
		BaseDir:    x.in.BaseDir,
		Timeout:    s.Timeout,
		Retry:      retrySpec(s.Retry),
		Handler:    handlerSpec(s.FailureHandler),

		PriorAttempts: x.run.PriorAttempts(s.Name),
	}
	if in.Retry.RetryWhen != "" || in.Retry.StopWhen != "" {
		in.Scope = x.run.Env()
	}
	in.Lost = &activities.LostSpec{Attempts: s.LostAttempts}
	return in
}

// startChild runs a sub-playbook as a child workflow of the generic
// workflow. Its ID extends the parent's with the step name, so the Web UI
// shows the tree; cancelling the step (or the parent) cancels the child,
// and the step waits for the child's own `end`.
func (x *executor) startChild(ctx workflow.Context, s *interpreter.Step, spec map[string]any) (workflow.Future, *interpreter.StepError) {
	rel := spec["path"].(string)
	path := interpreter.SubPlaybookPath(x.in.BaseDir, rel)
	src, ok := x.in.Files[path]
	if !ok {
		return nil, &interpreter.StepError{Type: "tool_error", Message: "sub-playbook " + rel + " was not frozen into the run at submission"}
	}
	workload, _ := spec["workload"].(map[string]any)
	child := Input{File: filepath.Join(filepath.Dir(x.in.File), rel), BaseDir: filepath.Dir(path), Source: src, Workload: workload, Files: x.in.Files, Index: x.in.Index}
	opts := workflow.ChildWorkflowOptions{
		WorkflowID:          x.childID(ctx, s.Name, s.Name),
		TaskQueue:           x.info.TaskQueueName,
		StaticSummary:       "step " + s.Name + ": sub-playbook " + rel,
		WaitForCancellation: true,
	}
	if x.in.Index {
		if childPb, err := interpreter.Parse(child.File, []byte(src)); err == nil {
			opts.TypedSearchAttributes = StartAttributes(childPb.Name)
		}
	}
	if s.Timeout > 0 {
		opts.WorkflowExecutionTimeout = s.Timeout
	}
	return workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, opts), WorkflowName, child), nil
}

// childOutcome reads a finished sub-playbook: its aggregate is the step's
// result when it completed, and its error's details when it failed.
func (x *executor) childOutcome(f workflow.Future) interpreter.Outcome {
	var agg map[string]any
	err := f.Get(x.ctx, &agg)
	if err == nil {
		return interpreter.Outcome{Result: agg, Attempts: 1}
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == FailedErrorType {
		_ = appErr.Details(&agg)
		return interpreter.Outcome{Err: &interpreter.StepError{Type: "playbook_failed", Message: appErr.Message(), Details: agg},
			Attempts: 1, Recovery: interpreter.RecoveryNoHandler}
	}
	var canErr *temporal.CanceledError
	if errors.As(err, &canErr) {
		_ = canErr.Details(&agg)
		return interpreter.Outcome{Err: &interpreter.StepError{Type: interpreter.ErrCancelled, Message: "the sub-playbook was cancelled", Details: agg}, Attempts: 1}
	}
	return interpreter.Outcome{Err: &interpreter.StepError{Type: "playbook_error", Message: err.Error()}, Attempts: 1, Recovery: interpreter.RecoveryNoHandler}
}

// settle records a finished activity in the run.
func (x *executor) settle(s *interpreter.Step, f workflow.Future) {
	x.run.Settle(s.Name, x.outcome(s, f))
}

func (x *executor) outcome(s *interpreter.Step, f workflow.Future) interpreter.Outcome {
	switch {
	case s.Loop != nil:
		var o interpreter.Outcome
		_ = f.Get(x.ctx, &o)
		return o
	case s.Tool.Kind == "playbook":
		return x.childOutcome(f)
	}
	return activityOutcome(x.ctx, f, s, x.inputs[s.Name])
}

// activityOutcome reads a finished RunStep activity that was given in.
func activityOutcome(ctx workflow.Context, f workflow.Future, s *interpreter.Step, in activities.StepInput) interpreter.Outcome {
	var out activities.StepOutput
	if err := f.Get(ctx, &out); err != nil {
		return outcomeOf(ctx, err, s, in)
	}
	return interpreter.Outcome{Result: out.Result, Attempts: out.Attempts, AttemptErrors: out.AttemptErrors}
}

// outcomeOf reads a failed activity. An attempt that decided to stop carries
// its structured error, attempt count and history. A timeout the server
// enforced (a lost worker, start-to-close) ended the last attempt the policy
// allowed (with lost_attempts, the last lost attempt it had room for); the
// attempt log of its heartbeats says what came before.
func outcomeOf(ctx workflow.Context, err error, s *interpreter.Step, in activities.StepInput) interpreter.Outcome {
	priorAttempts := in.PriorAttempts
	noRule := interpreter.RecoveryNoHandler
	if s.FailureHandler != nil {
		noRule = interpreter.RecoveryNoMatchingRule
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		var d activities.FailureDetails
		if appErr.HasDetails() && appErr.Details(&d) == nil {
			return interpreter.Outcome{Err: &d.Error, Attempts: d.Attempts, Recovery: d.Recovery, AttemptErrors: d.AttemptErrors}
		}
		return interpreter.Outcome{Err: &interpreter.StepError{Type: appErr.Type(), Message: appErr.Message()}, Attempts: 1, Recovery: noRule}
	}
	var toErr *temporal.TimeoutError
	if errors.As(err, &toErr) {
		// The server gave the last attempt up: with the policy spent, that
		// was its last allowed attempt.
		var log activities.AttemptLog
		if toErr.HasLastHeartbeatDetails() {
			_ = toErr.LastHeartbeatDetails(&log)
		}
		attempts := max(log.Current-priorAttempts, 1)
		var ae *temporal.ActivityError
		if errors.As(err, &ae) && ae.RetryState() == enumspb.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED {
			if in.Lost != nil && workflow.GetVersion(ctx, lostAttemptsChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
				in.Lost = nil // recorded when the policy had no room for lost attempts
			}
			attempts = int(activityOptions(s, in).RetryPolicy.MaximumAttempts)
		}
		last := priorAttempts + attempts
		lost := activities.LostAttempt(last)
		if toErr.TimeoutType() != enumspb.TIMEOUT_TYPE_HEARTBEAT {
			lost.Error, lost.Lost = interpreter.StepError{Type: "execution_timeout", Message: toErr.Error()}, false
		}
		failed := activities.WithLostAttempts(append(log.Failed, lost), priorAttempts+1, last)
		return interpreter.Outcome{Err: &lost.Error, Attempts: attempts, Recovery: noRule, AttemptErrors: failed}
	}
	var canErr *temporal.CanceledError
	if errors.As(err, &canErr) {
		return interpreter.Outcome{Err: &interpreter.StepError{Type: interpreter.ErrCancelled, Message: "the step was cancelled while it ran"}, Attempts: 1}
	}
	return interpreter.Outcome{Err: &interpreter.StepError{Type: "activity_error", Message: err.Error()}, Attempts: 1, Recovery: noRule}
}

func handlerSpec(h *interpreter.FailureHandler) *activities.HandlerSpec {
	if h == nil {
		return nil
	}
	return &activities.HandlerSpec{Name: h.Name, Rules: h.Rules}
}

func retrySpec(r *interpreter.Retry) activities.RetrySpec {
	if r == nil {
		return activities.RetrySpec{MaxAttempts: 1}
	}
	spec := activities.RetrySpec{MaxAttempts: r.MaxAttempts, InitialDelay: r.InitialDelay, Multiplier: r.Multiplier, MaxDelay: r.MaxDelay, Jitter: r.Jitter}
	if r.RetryWhen != nil {
		spec.RetryWhen = r.RetryWhen.Source
	}
	if r.StopWhen != nil {
		spec.StopWhen = r.StopWhen.Source
	}
	return spec
}

// activityOptions derive a step's Temporal activity options: its name as
// activity ID and UI summary, its timeouts, and its retry block as the
// RetryPolicy (the activity picks each delay itself through NextRetryDelay;
// the policy governs timeouts the server enforces). The policy has room for
// the step's lost attempts on top of its own (in.Lost).
func activityOptions(s *interpreter.Step, in activities.StepInput) workflow.ActivityOptions {
	spec := retrySpec(s.Retry)
	attempts := spec.MaxAttempts
	if s.FailureHandler != nil {
		for _, r := range s.FailureHandler.Rules {
			attempts = max(attempts, r.MaxRetries+1)
		}
	}
	defaultHeartbeat := oldHeartbeatTimeout
	if in.Lost != nil {
		attempts += in.Lost.Attempts
		defaultHeartbeat = DefaultHeartbeatTimeout
	}
	policy := &temporal.RetryPolicy{
		MaximumAttempts:    int32(attempts),
		InitialInterval:    max(spec.InitialDelay, time.Millisecond),
		BackoffCoefficient: max(spec.Multiplier, 1),
		MaximumInterval:    max(spec.MaxDelay, spec.InitialDelay, time.Millisecond),
	}
	startToClose := noTimeout
	if s.Timeout > 0 {
		startToClose = s.Timeout + timeoutGrace
	}
	heartbeat := s.HeartbeatTimeout
	if heartbeat == 0 {
		heartbeat = defaultHeartbeat
	}
	summary := s.Name
	if s.Desc != "" {
		summary += ": " + s.Desc
	}
	return workflow.ActivityOptions{
		ActivityID:          s.Name,
		Summary:             summary,
		StartToCloseTimeout: startToClose,
		HeartbeatTimeout:    heartbeat,
		RetryPolicy:         policy,
		// A cancelled step reports only after its process group is gone.
		WaitForCancellation: true,
	}
}
