package playbookwf

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
)

// Approval and wait steps run nothing: the workflow decides them with a
// durable timer or a person's decision. Both kinds are newer than every
// recorded history, so an old run never comes here, and registering the
// Update handler and the query issues no command: no version gate is
// needed. The search attribute upserts (waiting, then running again) come
// only from approval steps, for the same reason.

// startPause starts an approval or a wait step; its future settles with
// the step's contract.Outcome.
func (x *executor) startPause(ctx workflow.Context, s *spec.Step) (workflow.Future, *contract.StepError) {
	toolSpec, err := x.run.RenderTool(s)
	if err != nil {
		return nil, &contract.StepError{Type: contract.ErrTemplate, Message: err.Error()}
	}
	if s.Tool.Kind == "wait" {
		return x.startWait(ctx, s, toolSpec)
	}
	if s.Tool.Kind == spec.WaitEventKind {
		return x.startWaitEvent(ctx, s), nil
	}
	return x.startApproval(ctx, s, toolSpec), nil
}

// startWait waits on a durable timer until the step's time; a time past
// completes the step at once, with no timer.
func (x *executor) startWait(ctx workflow.Context, s *spec.Step, toolSpec map[string]any) (workflow.Future, *contract.StepError) {
	now := workflow.Now(ctx)
	until := now.Add(s.Tool.WaitDuration())
	if u, ok := toolSpec["until"]; ok && u != nil {
		t, err := time.Parse(time.RFC3339, expr.Text(u))
		if err != nil {
			return nil, &contract.StepError{Type: contract.ErrTool, Message: fmt.Sprintf("until %q is not an RFC 3339 time (e.g. 2026-01-02T06:00:00Z)", expr.Text(u))}
		}
		if t.After(spec.LastTimerTime) && version(ctx, changeWaitUntilBound) >= 1 {
			return nil, &contract.StepError{Type: contract.ErrTool, Message: strings.TrimPrefix(spec.UntilUnreachable(expr.Text(u)), "wait tool: ")}
		}
		until = t
	}
	f, settle := workflow.NewFuture(ctx)
	waited := max(until.Sub(now), 0)
	done := contract.Outcome{Attempts: 1, Result: map[string]any{"waited": waited.Round(time.Millisecond).String(), "until": until.UTC().Format(time.RFC3339Nano)}}
	if waited == 0 {
		settle.Set(done, nil)
		return f, nil
	}
	x.run.AwaitTime(s.Name, until, waited.Round(time.Millisecond))
	timer := workflow.NewTimerWithOptions(ctx, waited, workflow.TimerOptions{Summary: "wait " + s.Name})
	workflow.Go(ctx, func(gctx workflow.Context) {
		if timer.Get(gctx, nil) != nil {
			done = cancelledWaiting("while it waited")
		}
		settle.Set(done, nil)
	})
	return f, nil
}

func cancelledWaiting(when string) contract.Outcome {
	return contract.Outcome{Err: &contract.StepError{Type: contract.ErrCancelled, Message: "the step was cancelled " + when}}
}

// startApproval makes the step wait for a decision: the approval Update
// (registerApproval) sends one, the step's timeout may decide one, a
// cancel ends the wait.
func (x *executor) startApproval(ctx workflow.Context, s *spec.Step, toolSpec map[string]any) workflow.Future {
	x.run.AwaitApproval(s.Name, expr.Text(toolSpec["message"]))
	x.indexStatus()
	x.notifyWaiting(s.Name)
	decided := workflow.NewBufferedChannel(ctx, 1)
	x.approvals[s.Name] = pendingApproval{decided: decided, ctx: ctx}
	f, settle := workflow.NewFuture(ctx)
	timeout := s.Tool.Approval().Timeout
	workflow.Go(ctx, func(gctx workflow.Context) {
		timerCtx, stopTimer := workflow.WithCancel(gctx)
		var o *contract.Outcome
		sel := workflow.NewSelector(gctx)
		sel.AddReceive(decided, func(c workflow.ReceiveChannel, _ bool) {
			var d contract.Outcome
			c.Receive(gctx, &d)
			o = &d
		})
		sel.AddReceive(gctx.Done(), func(workflow.ReceiveChannel, bool) {
			// A decision accepted before the cancel reached the step
			// stands: its sender was told so.
			var d contract.Outcome
			if decided.ReceiveAsync(&d) {
				o = &d
				return
			}
			c := cancelledWaiting("while it waited for approval")
			o = &c
		})
		if timeout > 0 {
			timer := workflow.NewTimerWithOptions(timerCtx, timeout, workflow.TimerOptions{Summary: "approval timeout " + s.Name})
			sel.AddFuture(timer, func(f workflow.Future) {
				// A decision that came in the same moment stands: it is
				// in the channel, and the step no longer waits.
				if f.Get(gctx, nil) == nil && x.run.State(s.Name).Waiting != nil {
					t := x.run.ApprovalTimedOut(s.Name)
					o = &t
				}
			})
		}
		for o == nil {
			sel.Select(gctx)
		}
		stopTimer()
		delete(x.approvals, s.Name)
		settle.Set(*o, nil)
	})
	return f
}

// pendingApproval is an approval step waiting: the channel its decision
// goes to, and the step's context, which a cancel or the run's deadline
// cancels.
type pendingApproval struct {
	decided workflow.Channel
	ctx     workflow.Context
}

// waiting is the approval step a decision names, while a decision can
// still reach it: not once a cancel or the deadline has reached the step
// (its wait ends cancelled, and a decision accepted then would be lost).
func (x *executor) waiting(step string) (pendingApproval, error) {
	p, ok := x.approvals[step]
	switch {
	case !ok:
		return p, fmt.Errorf("step %q is not waiting for approval", step)
	case p.ctx.Err() != nil:
		return p, fmt.Errorf("step %q is being cancelled: it no longer waits for approval", step)
	}
	return p, nil
}

// registerApproval accepts decisions on waiting approval steps. The
// validator rejects a decision that cannot apply (no such step, not
// waiting, being cancelled, an input not declared or of another type, a
// name not among the approvers, a decision over its size or with a control
// character in by or reason) before anything is written to history.
func registerApproval(ctx workflow.Context, x *executor) error {
	return workflow.SetUpdateHandlerWithOptions(ctx, contract.UpdateApproval,
		func(ctx workflow.Context, d contract.ApprovalDecision) (string, error) {
			p, err := x.waiting(d.Step)
			if err != nil {
				return "", err
			}
			o, err := x.run.Decide(d)
			if err != nil {
				return "", err
			}
			p.decided.SendAsync(o)
			word := "approved"
			if d.Decision == contract.DecisionReject {
				word = "rejected"
			}
			return fmt.Sprintf("step %s %s", d.Step, word), nil
		},
		workflow.UpdateHandlerOptions{Validator: func(d contract.ApprovalDecision) error {
			if err := contract.CheckDecision(d); err != nil {
				return err
			}
			if _, err := x.waiting(d.Step); err != nil {
				return err
			}
			return x.run.CheckApproval(d)
		}})
}

// indexStatus keeps the run's PlaybookStatus search attribute at its
// status so far (engine.Run.OpenStatus): queued while it waits for a slot
// of its concurrency key, waiting while a step waits for a person or an
// event, running otherwise; `list --status` reads it. A run records
// queued only on the new side of queued-status: one queued before the
// change issued no upsert there, nor when it was granted its slot.
func (x *executor) indexStatus() {
	status := x.run.OpenStatus()
	if !x.in.Index || status == x.indexed() {
		return
	}
	if status == contract.RunQueued && version(x.ctx, changeQueuedStatus) == workflow.DefaultVersion {
		return
	}
	x.indexedStatus = status
	if err := workflow.UpsertTypedSearchAttributes(x.ctx, attrPlaybookStatus.ValueSet(status)); err != nil {
		workflow.GetLogger(x.ctx).Warn("search attributes not updated", "error", err)
	}
}

// indexed is the status the run's search attribute holds before it ends.
func (x *executor) indexed() string {
	if x.indexedStatus == "" {
		return contract.RunRunning
	}
	return x.indexedStatus
}

// notifyWaiting posts notify.on_waiting's webhook, if the playbook has
// one, when a step starts waiting for a person: the run, the step, its
// message and the commands that decide it. It runs beside the run, which
// waits for it only before it ends (awaitWaitingNotices); a webhook that
// fails is logged, not fatal.
func (x *executor) notifyWaiting(step string) {
	url, err := x.run.WaitingWebhook()
	if err != nil {
		workflow.GetLogger(x.ctx).Warn("notify on_waiting: webhook did not render", "error", err)
		return
	}
	if url == "" {
		return
	}
	notice := x.run.WaitingNotice(step)
	// Told apart from the run's cancellation, as the run's outcome is: a
	// cancel that comes while it is sent does not lose it.
	ctx, _ := workflow.NewDisconnectedContext(x.ctx)
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		ActivityID:          "notify-on_waiting-" + step,
		Summary:             "notify on_waiting " + step,
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 500 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second, MaximumAttempts: 4},
	})
	f := workflow.ExecuteActivity(ctx, contract.NotifyName, contract.NotifyInput{Event: "on_waiting", Webhook: url, Aggregate: notice})
	x.waitingNotices = append(x.waitingNotices, f)
	workflow.Go(x.ctx, func(gctx workflow.Context) {
		if err := f.Get(gctx, nil); err != nil {
			workflow.GetLogger(gctx).Warn("notify on_waiting failed", "step", step, "error", err)
		}
	})
}

// awaitWaitingNotices waits for the on_waiting webhooks still being sent:
// a run that ends at once after a decision would otherwise abandon them.
func (x *executor) awaitWaitingNotices() {
	for _, f := range x.waitingNotices {
		_ = f.Get(x.ctx, nil)
	}
}
