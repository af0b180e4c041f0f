package playbookwf

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// wait_event steps wait for the event Update (registerEvents). The kind is
// newer than every recorded history, and registering the Update issues no
// command: a run without wait_event steps refuses every event in the
// validator, before anything reaches its history, so that its commands
// are what they were. No version gate is needed.

// eventBoxes are the wait_event steps' mailboxes: the event each has
// received (one at most, kept until the step starts), and the context of
// each step started, which a cancel or the deadline cancels.
type eventBoxes struct {
	inbox map[string]workflow.Channel
	taken map[string]bool
	ctx   map[string]workflow.Context
}

// box is step's mailbox, made on first use.
func (x *executor) box(step string) workflow.Channel {
	if x.events.inbox == nil {
		x.events = eventBoxes{inbox: map[string]workflow.Channel{}, taken: map[string]bool{}, ctx: map[string]workflow.Context{}}
	}
	if x.events.inbox[step] == nil {
		x.events.inbox[step] = workflow.NewBufferedChannel(x.ctx, 1)
	}
	return x.events.inbox[step]
}

// eventTakers are the steps an event goes to now, or why none would take
// it: a step whose wait a cancel or the deadline has reached takes none.
func (x *executor) eventTakers(event string) ([]string, error) {
	takers, err := x.run.EventTakers(event, x.events.taken)
	if err != nil {
		return nil, err
	}
	var open, cancelling []string
	for _, s := range takers {
		if c := x.events.ctx[s]; c != nil && c.Err() != nil {
			cancelling = append(cancelling, s)
			continue
		}
		open = append(open, s)
	}
	if len(open) == 0 {
		return nil, fmt.Errorf("step %s is being cancelled: it no longer waits for event %s", strings.Join(cancelling, ", "), event)
	}
	return open, nil
}

// registerEvents accepts events for the run's wait_event steps: (event,
// data, by). The validator refuses, before anything is written to
// history, an event whose name, data or by is refused by CheckEvent, and
// one that no step would take (none waits for it, each that does has had
// its event or has ended): a run takes at most one event per wait_event
// step, whatever is sent to it.
func registerEvents(ctx workflow.Context, x *executor) error {
	return workflow.SetUpdateHandlerWithOptions(ctx, contract.UpdateEvent,
		func(ctx workflow.Context, event string, data any, by string) (string, error) {
			takers, err := x.eventTakers(event)
			if err != nil {
				return "", err
			}
			if by == "" {
				by = "anonymous"
			}
			ev := contract.EventReceived{Event: event, Data: data, By: by, At: workflow.Now(ctx).UTC().Format(time.RFC3339)}
			for _, s := range takers {
				x.box(s).SendAsync(ev)
				x.events.taken[s] = true
			}
			return fmt.Sprintf("event %s received by step %s", event, strings.Join(takers, ", ")), nil
		},
		workflow.UpdateHandlerOptions{Validator: func(event string, data any, by string) error {
			if err := contract.CheckEvent(event, data, by); err != nil {
				return err
			}
			_, err := x.eventTakers(event)
			return err
		}})
}

// startWaitEvent makes a wait_event step wait for its event: one received
// before the step started completes it at once; else the step waits, the
// run shows `waiting`, and the event, the step's timeout or a cancel ends
// the wait.
func (x *executor) startWaitEvent(ctx workflow.Context, s *spec.Step) workflow.Future {
	inbox := x.box(s.Name)
	x.events.ctx[s.Name] = ctx
	f, settle := workflow.NewFuture(ctx)
	var ev contract.EventReceived
	if inbox.ReceiveAsync(&ev) {
		settle.Set(x.run.EventArrived(s.Name, ev), nil)
		return f
	}
	w := s.Tool.WaitEvent()
	x.run.AwaitEvent(s.Name)
	x.indexStatus()
	x.notifyEventWaiting(s.Name)
	workflow.Go(ctx, func(gctx workflow.Context) {
		timerCtx, stopTimer := workflow.WithCancel(gctx)
		var o *contract.Outcome
		// An event already in the box stands, whatever else ends the wait
		// in the same moment: its sender was told it was received.
		arrived := func() bool {
			if !inbox.ReceiveAsync(&ev) {
				return false
			}
			out := x.run.EventArrived(s.Name, ev)
			o = &out
			return true
		}
		sel := workflow.NewSelector(gctx)
		sel.AddReceive(inbox, func(workflow.ReceiveChannel, bool) { arrived() })
		sel.AddReceive(gctx.Done(), func(workflow.ReceiveChannel, bool) {
			if !arrived() {
				c := cancelledWaiting("while it waited for event " + w.Event)
				o = &c
			}
		})
		if w.Timeout > 0 {
			timer := workflow.NewTimerWithOptions(timerCtx, w.Timeout, workflow.TimerOptions{Summary: "event timeout " + s.Name})
			sel.AddFuture(timer, func(f workflow.Future) {
				if f.Get(gctx, nil) == nil && !arrived() {
					t := x.run.EventTimedOut(s.Name)
					o = &t
				}
			})
		}
		for o == nil {
			sel.Select(gctx)
		}
		stopTimer()
		settle.Set(*o, nil)
	})
	return f
}

// notifyEventWaiting posts notify.on_waiting for a step that starts
// waiting for an event, as for an approval; runs started before the change
// (wait-event-notice) posted nothing there. The version is asked only
// where a webhook would be posted.
func (x *executor) notifyEventWaiting(step string) {
	if url, err := x.run.WaitingWebhook(); err == nil && url == "" {
		return
	}
	if version(x.ctx, changeWaitEventNotice) == workflow.DefaultVersion {
		return
	}
	x.notifyWaiting(step)
}
