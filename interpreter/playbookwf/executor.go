package playbookwf

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
	"playbook/interpreter/spec"
)

// notify posts the aggregate to the webhook for its outcome, as an activity
// Temporal retries; a webhook that keeps failing is recorded in the
// aggregate and does not change the outcome.
func (x *executor) notify(agg *contract.Aggregate) {
	event, url, err := x.run.Webhook(agg.Status)
	if err != nil {
		agg.Notifications = append(agg.Notifications, contract.Notification{Event: event, Error: "webhook: " + err.Error()})
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
	err = workflow.ExecuteActivity(ctx, contract.NotifyName, contract.NotifyInput{Event: event, Webhook: url, Aggregate: agg}).Get(ctx, nil)
	n := contract.Notification{Event: event, Webhook: contract.Redact(url), Delivered: err == nil}
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
	run  *engine.Run
	in   contract.Input
	info *workflow.Info
	// cancels holds each started step's cancellation scope.
	cancels map[string]workflow.CancelFunc
	// noopVersion is the noop-in-workflow version, once a noop step asked.
	noopVersion *workflow.Version
	// inputs holds what each step's activity was given, to read its outcome.
	inputs map[string]contract.StepInput
	// endDetached: see detachEnd; nil until asked.
	endDetached *bool
	// paced counts the calls of pace; yields or noYields, once asked,
	// whether the run yields (a run from before does not).
	paced            int
	yields, noYields bool
	// deadline is the run's (nil: none), which its sub-playbooks inherit.
	deadline *contract.Deadline
	// cleanupCtx is where cleanup steps (on_cancel: run) start: a context
	// a cancel request does not reach, made when the first one starts.
	cleanupCtx workflow.Context
	// approvals holds each approval step waiting (pauses.go);
	// indexedStatus is the run's status in its search attribute while it
	// is open ("": running, as the run started).
	approvals     map[string]pendingApproval
	indexedStatus string
	// events are the wait_event steps' mailboxes (waitevent.go).
	events eventBoxes
	// waitingNotices are the on_waiting webhooks sent, which the run
	// waits for before it ends, so that none is abandoned.
	waitingNotices []workflow.Future
	// children are the traces of the sub-playbooks' runs, by step, noted
	// as each ends when the run emits spans (trace.go).
	children map[string]contract.TraceID
	// spans are the steps whose span the run made (trace.go).
	spans engine.StepSpans
}

// paceEvery is how many steps the workflow decides between two yields.
const paceEvery = 100

// pace lets the SDK's deadlock detector see the run make progress. Steps
// decided in the workflow (no tool, noop, their loops) never wait, and a
// long run of them would hold the workflow's coroutine past the
// detector's one second, failing the workflow task on every attempt. Every
// paceEvery calls it yields to the SDK's dispatcher. A yield issues no
// command, but the run's other coroutines (a loop's elements, the cancel
// watcher, update handlers) run there and may: so the yields are a
// version (changePaceYields), asked at the first one, and they count
// calls, not time, so that a replay yields at the same points.
func (x *executor) pace() {
	x.paced++
	if x.paced%paceEvery != 0 || x.noYields {
		return
	}
	if !x.yields {
		if version(x.ctx, changePaceYields) == workflow.DefaultVersion {
			x.noYields = true // a run from before
			return
		}
		x.yields = true
	}
	yield(x.ctx)
}

// start renders a step's tool and schedules its activity, or its child
// workflow for a sub-playbook, in a cancellation scope of its own; a
// cleanup step's scope is under a context the run's cancellation does not
// reach, so that it runs after a cancel and is never cancelled with it.
func (x *executor) start(s *spec.Step) (workflow.Future, *contract.StepError) {
	parent := x.ctx
	if s.OnCancelRun {
		if x.cleanupCtx == nil {
			x.cleanupCtx, _ = workflow.NewDisconnectedContext(x.ctx)
		}
		parent = x.cleanupCtx
	}
	ctx, cancel := workflow.WithCancel(parent)
	x.cancels[s.Name] = cancel
	if s.Tool.Kind == spec.FailKind {
		return x.raise(ctx, s)
	}
	if x.decidesInWorkflow(s) {
		return x.decideInWorkflow(ctx, s)
	}
	if spec.IsPause(s.Tool.Kind) {
		return x.startPause(ctx, s)
	}
	if s.Loop != nil {
		// A loop renders its tool once per element.
		return x.startLoop(ctx, s)
	}
	toolSpec, err := x.run.RenderTool(s)
	if err != nil {
		return nil, &contract.StepError{Type: contract.ErrTemplate, Message: err.Error()}
	}
	if s.Tool.Kind == "playbook" {
		return x.startChild(ctx, s, toolSpec)
	}
	in := x.stepInput(s, s.Name, toolSpec)
	if in.Files, err = x.run.RenderFiles(s); err != nil {
		return nil, &contract.StepError{Type: contract.ErrTemplate, Message: err.Error()}
	}
	if err := x.tooLarge("the input of step "+s.Name, in); err != nil {
		return nil, err
	}
	x.inputs[s.Name] = in
	if s.Local {
		return startLocal(ctx, s, in, ""), nil
	}
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, activityOptions(s, in)), contract.RunStepName, in), nil
}

// stepInput is what one attempt of a step (or of a loop's element) gets.
func (x *executor) stepInput(s *spec.Step, name string, toolSpec map[string]any) contract.StepInput {
	in := contract.StepInput{
		WorkflowID: x.info.WorkflowExecution.ID,
		RunID:      x.info.WorkflowExecution.RunID,
		Step:       name,
		Kind:       s.Tool.Kind,
		Spec:       toolSpec,
		BaseDir:    x.in.BaseDir,
		Timeout:    s.Timeout,
		Retry:      s.RetryBlock(),
		Handler:    s.FailureHandler,

		PriorAttempts: x.run.PriorAttempts(s.Name),
		LogicalTime:   x.run.LogicalTime(),
		Secrets:       s.Tool.SecretFields(),
		LargeValues:   x.in.LargeValues,
	}
	if in.Retry.RetryWhen != nil || in.Retry.StopWhen != nil {
		in.Scope = x.run.ScopeFor(in.Retry.RetryWhen, in.Retry.StopWhen)
	}
	if s.Local {
		// A lost local attempt is run again by its workflow task's retry.
		in.Local = &contract.LocalAttempts{}
		return in
	}
	in.Lost = &contract.LostSpec{Attempts: s.LostAttempts}
	return in
}
