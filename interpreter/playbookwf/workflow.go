// Package playbookwf is the thin Temporal adapter of the interpreter: one
// generic workflow that asks the pure core which steps are ready and turns
// the answers into activities, then lets `end` decide the run.
package playbookwf

import (
	"errors"
	"fmt"
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
	// FailedErrorType is the application error type of a failed run.
	FailedErrorType = "PlaybookFailed"
)

// noTimeout stands for a step without `timeout`: the attempt may run as
// long as its worker keeps heartbeating.
const noTimeout = 10 * 365 * 24 * time.Hour

// DefaultHeartbeatTimeout is how long a silent worker keeps an attempt when
// the step sets no heartbeat_timeout.
const DefaultHeartbeatTimeout = 30 * time.Second

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
	// Workload overrides the playbook's workload defaults key by key.
	Workload map[string]any `json:"workload,omitempty"`
}

// Playbook is the generic workflow. It returns the aggregate when `end`
// decides the run completed, and a PlaybookFailed application error whose
// details are the aggregate when `end` decides it failed.
func Playbook(ctx workflow.Context, in Input) (*interpreter.Aggregate, error) {
	pb, err := interpreter.Parse(in.File, []byte(in.Source))
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidPlaybook", nil)
	}
	info := workflow.GetInfo(ctx)
	run := interpreter.NewRun(pb, in.Workload, info.WorkflowExecution.ID, func() time.Time { return workflow.Now(ctx) })
	if err := registerQueries(ctx, run); err != nil {
		return nil, err
	}
	x := &executor{ctx: ctx, run: run, in: in, info: info}

	sel := workflow.NewSelector(ctx)
	running := 0
	for {
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
				})
			}
		}
		if run.EndReady() {
			break
		}
		if running == 0 {
			return nil, temporal.NewNonRetryableApplicationError("interpreter stalled: steps pending with nothing running: "+strings.Join(run.Running(), ","), "InterpreterError", nil)
		}
		sel.Select(ctx)
	}

	run.StartEnd()
	var endResult any
	var endErr *interpreter.StepError
	endAttempts := 0
	if end := pb.End(); end.Tool != nil {
		f, err := x.start(end)
		if err != nil {
			endErr = err
		} else {
			endResult, endErr, endAttempts = x.outcome(end, f)
		}
	}
	agg := run.Finish(endResult, endErr, endAttempts)
	agg.WorkflowID, agg.RunID = info.WorkflowExecution.ID, info.WorkflowExecution.RunID
	if agg.Status == interpreter.RunCompleted {
		return agg, nil
	}
	msg := fmt.Sprintf("playbook %s failed: %d of %d steps failed", pb.Name, agg.FailedStepsCount, agg.TotalSteps)
	if len(agg.FailedSteps) > 0 {
		msg += " (" + strings.Join(agg.FailedSteps, ", ") + ")"
	}
	return nil, temporal.NewApplicationErrorWithOptions(msg, FailedErrorType, temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{agg}})
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
	return workflow.SetQueryHandler(ctx, QueryState, func() (*interpreter.Aggregate, error) { return run.Snapshot(), nil })
}

// executor turns the core's decisions into activities.
type executor struct {
	ctx  workflow.Context
	run  *interpreter.Run
	in   Input
	info *workflow.Info
}

// start renders a step's tool and schedules its activity.
func (x *executor) start(s *interpreter.Step) (workflow.Future, *interpreter.StepError) {
	spec, err := x.run.RenderTool(s)
	if err != nil {
		return nil, &interpreter.StepError{Type: "template_error", Message: err.Error()}
	}
	in := activities.StepInput{
		WorkflowID: x.info.WorkflowExecution.ID,
		RunID:      x.info.WorkflowExecution.RunID,
		Step:       s.Name,
		Kind:       s.Tool.Kind,
		Spec:       spec,
		BaseDir:    x.in.BaseDir,
		Timeout:    s.Timeout,
		Retry:      retrySpec(s.Retry),
	}
	if in.Retry.RetryWhen != "" || in.Retry.StopWhen != "" {
		in.Scope = x.run.Env()
	}
	return workflow.ExecuteActivity(workflow.WithActivityOptions(x.ctx, activityOptions(s)), activities.RunStepName, in), nil
}

// settle records a finished activity in the run.
func (x *executor) settle(s *interpreter.Step, f workflow.Future) {
	result, stepErr, attempts := x.outcome(s, f)
	if stepErr != nil {
		x.run.Fail(s.Name, stepErr, attempts)
		return
	}
	x.run.Complete(s.Name, result, attempts)
}

func (x *executor) outcome(s *interpreter.Step, f workflow.Future) (any, *interpreter.StepError, int) {
	var out activities.StepOutput
	if err := f.Get(x.ctx, &out); err != nil {
		stepErr, attempts := stepErrorOf(err, s)
		return nil, stepErr, attempts
	}
	return out.Result, nil, out.Attempts
}

// stepErrorOf reads the structured error of a failed activity. An attempt
// that decided to stop carries its error and attempt count; a timeout the
// server enforced (heartbeat lost, start-to-close) exhausted the retry
// policy, so its attempt count is the policy's maximum.
func stepErrorOf(err error, s *interpreter.Step) (*interpreter.StepError, int) {
	maxAttempts := 1
	if s.Retry != nil {
		maxAttempts = s.Retry.MaxAttempts
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		var d activities.FailureDetails
		if appErr.HasDetails() && appErr.Details(&d) == nil {
			return &d.Error, d.Attempts
		}
		return &interpreter.StepError{Type: appErr.Type(), Message: appErr.Message()}, maxAttempts
	}
	var toErr *temporal.TimeoutError
	if errors.As(err, &toErr) {
		typ := "execution_timeout"
		if toErr.TimeoutType() == enumspb.TIMEOUT_TYPE_HEARTBEAT {
			typ = "heartbeat_timeout"
		}
		return &interpreter.StepError{Type: typ, Message: toErr.Error()}, maxAttempts
	}
	var canErr *temporal.CanceledError
	if errors.As(err, &canErr) {
		return &interpreter.StepError{Type: "cancelled", Message: "the step was cancelled"}, 0
	}
	return &interpreter.StepError{Type: "activity_error", Message: err.Error()}, maxAttempts
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
// the policy governs timeouts the server enforces).
func activityOptions(s *interpreter.Step) workflow.ActivityOptions {
	spec := retrySpec(s.Retry)
	policy := &temporal.RetryPolicy{
		MaximumAttempts:    int32(spec.MaxAttempts),
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
		heartbeat = DefaultHeartbeatTimeout
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
	}
}
