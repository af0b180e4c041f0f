package playbookwf

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// A playbook's `concurrency:` is kept by one coordinator workflow per
// playbook and key (PlaybookConcurrency, contract.CoordinatorID): a run
// asks it for a slot before its first step, and the coordinator grants
// slots in the order they were asked for, and takes a slot back when its
// holder has ended, however it ended: it watches each holder (the
// WatchHolder activity), since a run that is terminated or times out
// cannot say so. docs/INTERNALS.md, "Concurrency limits", has the design.

// takeSlot asks the run's key's coordinator for a slot and waits for one:
// it returns when the run holds a slot, when it is refused one (the run is
// then Refused), or when the run is cancelled while it waits.
func (x *executor) takeSlot(ctx workflow.Context, pb *spec.Playbook) {
	c := pb.Concurrency
	key, err := x.run.ConcurrencyKey(c)
	if err != nil {
		x.run.Refuse(err.Error())
		return
	}
	req := contract.SlotRequest{WorkflowID: x.info.WorkflowExecution.ID, RunID: x.info.WorkflowExecution.RunID, Playbook: pb.Name,
		Key: key, Limit: c.Limit, OnLimit: c.OnLimit, TaskQueue: x.info.TaskQueueName}
	coordinator := contract.CoordinatorID(pb.Name, key)
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           x.info.TaskQueueName,
		StartToCloseTimeout: time.Minute,
		Summary:             "concurrency slot of key " + contract.Cut(key, 100),
	})
	var ans contract.SlotAnswer
	if err := workflow.ExecuteActivity(actx, contract.AcquireSlotName, req).Get(actx, &ans); err != nil {
		if ctx.Err() == nil {
			x.run.Refuse("asking for a slot: " + err.Error())
		}
		x.leaveQueue(ctx, coordinator, req, false)
		x.cancelledQueued(ctx, false)
		return
	}
	switch {
	case ans.Refused != "":
		x.run.Refuse(ans.Refused)
		return
	case ans.Granted:
		return
	}
	x.run.Queue(&contract.QueuedRun{Key: key, Limit: c.Limit, Coordinator: coordinator, Holders: ans.Holders, Position: ans.Position})
	x.indexStatus()
	workflow.SetCurrentDetails(ctx, x.run.DetailsMarkdown())
	// The run waits for its grant, a cancel, its deadline (its timeout
	// counts the time queued) or a drain; but for the grant each ends the
	// wait without a slot, and the run goes on as it would at that moment:
	// no step starts, `end` runs.
	granted, gaveUp := false, false
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(workflow.GetSignalChannel(ctx, contract.SignalSlotGranted), func(ch workflow.ReceiveChannel, _ bool) {
		ch.Receive(ctx, nil)
		granted = true
	})
	sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
	sel.AddReceive(workflow.GetSignalChannel(ctx, contract.SignalDrain), func(ch workflow.ReceiveChannel, _ bool) {
		var reason string
		if ch.ReceiveAsync(&reason) {
			x.run.RecordCancelReason(reason)
			x.run.Drain()
			gaveUp = true
		}
	})
	if d := x.deadline; d != nil {
		tctx, stopTimer := workflow.WithCancel(ctx)
		defer stopTimer()
		left := max(d.At.Sub(workflow.Now(ctx)), time.Millisecond)
		timer := workflow.NewTimerWithOptions(tctx, left, workflow.TimerOptions{Summary: "deadline while queued: timeout " + d.Timeout + " of " + d.SetBy})
		sel.AddFuture(timer, func(f workflow.Future) {
			if f.Get(tctx, nil) == nil {
				x.run.TimeOut()
				gaveUp = true
			}
		})
	}
	for !granted && !gaveUp && ctx.Err() == nil {
		sel.Select(ctx)
	}
	if !granted {
		x.leaveQueue(ctx, coordinator, req, gaveUp)
		x.cancelledQueued(ctx, gaveUp)
		return
	}
	x.run.Queue(nil)
	x.indexStatus()
}

// cancelledQueued tells the run, cancelled while it asked for its slot or
// waited for it, that it is cancelled before its first steps are ready,
// which it would otherwise start; and a run that left the queue without
// its slot (cancelled, or given up waiting: its deadline, a drain) that
// no step starts, cleanup steps included (version 2). The version is
// asked only then: a run from before the change took no marker there,
// and replays as it ran; one cancelled on version 1 ran its cleanup
// steps, and replays so.
func (x *executor) cancelledQueued(ctx workflow.Context, gaveUp bool) {
	cancelled := ctx.Err() != nil && !gaveUp
	if !cancelled && !gaveUp {
		return
	}
	v := version(ctx, changeQueuedCancel)
	if cancelled && v >= 1 {
		recordCancelReasons(workflow.GetSignalChannel(ctx, contract.SignalCancelReason), x.run)
		x.run.CancelRun("cancel requested")
	}
	if v >= 2 {
		x.run.NeverStarted()
	}
}

// leaveQueue tells the coordinator that the run, cancelled (or given up
// waiting: its deadline, a drain), waits no more. A run that held a slot
// keeps it until it ends: its cleanup steps still run, and the coordinator
// sees it end.
func (x *executor) leaveQueue(ctx workflow.Context, coordinator string, req contract.SlotRequest, gaveUp bool) {
	if ctx.Err() == nil && !gaveUp {
		return
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	// A coordinator that has ended holds nothing of the run: the error,
	// if any, says nothing to act on.
	_ = workflow.SignalExternalWorkflow(dctx, coordinator, "", contract.SignalSlotLeave, req).Get(dctx, nil)
	x.run.LeaveQueue()
	// Its search attribute said queued (the new side of queued-status): it
	// says running now, for what the run does before it ends (its end).
	x.indexStatus()
}

// coordinatorHistoryBound is the history length past which a coordinator
// continues as new, carrying its holders and queue.
const coordinatorHistoryBound = 4000

// coordinatorIdleGrace is how long a coordinator with no holder and no
// queue stays before it ends: a burst of runs reuses it.
const coordinatorIdleGrace = 10 * time.Second

// watchHolderHeartbeat is the WatchHolder activity's heartbeat timeout:
// how soon a watch lost with its worker is started again.
const watchHolderHeartbeat = 10 * time.Second

// coordinator is PlaybookConcurrency's state.
type coordinator struct {
	ctx   workflow.Context
	slots contract.Slots
	sel   workflow.Selector
	// wake wakes the main loop after an update changed the slots.
	wake workflow.Channel
	// told are the grants and cancels sent to runs: the coordinator ends
	// or continues as new only once the server took each (it drops what a
	// workflow that has ended still sends, and a run never told of its
	// grant would wait for ever).
	told []workflow.Future
}

// settled tells whether every update has been answered and the server has
// taken every grant and cancel sent.
func (c *coordinator) settled(ctx workflow.Context) func() bool {
	return func() bool {
		c.told = slices.DeleteFunc(c.told, workflow.Future.IsReady)
		return len(c.told) == 0 && workflow.AllHandlersFinished(ctx)
	}
}

// PlaybookConcurrency is the coordinator of one playbook's concurrency
// key. It starts with the first run that asks for a slot (the
// AcquireSlot activity's update-with-start), continues as new with its
// holders and queue before its history grows long, and ends when no run
// holds or waits for a slot for a while.
func PlaybookConcurrency(ctx workflow.Context, slots contract.Slots) error {
	c := &coordinator{ctx: ctx, slots: slots, sel: workflow.NewSelector(ctx), wake: workflow.NewBufferedChannel(ctx, 1)}
	if err := workflow.SetQueryHandler(ctx, contract.QuerySlots, func() (contract.Slots, error) { return c.slots, nil }); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, contract.UpdateSlot, c.request, workflow.UpdateHandlerOptions{
		Validator: func(r contract.SlotRequest) error {
			if r.WorkflowID == "" || r.Limit < 1 {
				return fmt.Errorf("a slot request names a run and a limit of at least 1")
			}
			return nil
		},
	}); err != nil {
		return err
	}
	leave := workflow.GetSignalChannel(ctx, contract.SignalSlotLeave)
	c.sel.AddReceive(leave, func(ch workflow.ReceiveChannel, _ bool) { c.leave(ch) })
	c.sel.AddReceive(c.wake, func(ch workflow.ReceiveChannel, _ bool) { ch.Receive(ctx, nil) })
	// Watches are activities of the run before: they start again here.
	for _, h := range c.slots.Holders {
		c.watch(h)
	}
	c.grant()
	for {
		if c.idle() {
			busy, err := workflow.AwaitWithTimeout(ctx, coordinatorIdleGrace, func() bool { return !c.idle() })
			if err != nil {
				return err
			}
			if busy {
				continue
			}
			if err := workflow.Await(ctx, c.settled(ctx)); err != nil {
				return err
			}
			c.leave(leave)
			if c.idle() {
				return nil
			}
		}
		if info := workflow.GetInfo(ctx); info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > coordinatorHistoryBound {
			if err := workflow.Await(ctx, c.settled(ctx)); err != nil {
				return err
			}
			c.leave(leave)
			return workflow.NewContinueAsNewError(ctx, contract.CoordinatorWorkflowName, c.slots)
		}
		c.told = slices.DeleteFunc(c.told, workflow.Future.IsReady)
		c.sel.Select(ctx)
	}
}

func (c *coordinator) idle() bool { return len(c.slots.Holders) == 0 && len(c.slots.Queue) == 0 }

// request answers a run asking for a slot. A run that asks again (its
// activity retried) gets the answer it has: one run, one place.
func (c *coordinator) request(_ workflow.Context, r contract.SlotRequest) (contract.SlotAnswer, error) {
	c.slots.Limit = r.Limit
	if slices.ContainsFunc(c.slots.Holders, r.SameRun) {
		return contract.SlotAnswer{Granted: true}, nil
	}
	if i := slices.IndexFunc(c.slots.Queue, r.SameRun); i >= 0 {
		return c.queued(i), nil
	}
	if len(c.slots.Holders) < c.slots.Limit && len(c.slots.Queue) == 0 {
		c.hold(r)
		return contract.SlotAnswer{Granted: true}, nil
	}
	switch r.OnLimit {
	case spec.OnLimitFail:
		return contract.SlotAnswer{Refused: fmt.Sprintf("key %q allows %d %s at once, and %s %s (on_limit: fail)",
			r.Key, c.slots.Limit, plural(c.slots.Limit, "run"), strings.Join(c.holderIDs(), ", "), plural(len(c.slots.Holders), "holds it", "hold them"))}, nil
	case spec.OnLimitCancelRunning:
		// The oldest holder is cancelled, and this run is first to take
		// the slot it frees.
		oldest := c.slots.Holders[0]
		c.cancel(oldest, fmt.Sprintf("run %s of key %q took its slot (on_limit: cancel_running)", r.WorkflowID, r.Key))
		c.slots.Queue = slices.Insert(c.slots.Queue, 0, r)
		c.wake.SendAsync(true)
		return c.queued(0), nil
	}
	c.slots.Queue = append(c.slots.Queue, r)
	c.wake.SendAsync(true)
	return c.queued(len(c.slots.Queue) - 1), nil
}

// queued is the answer of the run at place i of the queue.
func (c *coordinator) queued(i int) contract.SlotAnswer {
	return contract.SlotAnswer{Holders: c.holderIDs(), Position: i + 1}
}

func (c *coordinator) holderIDs() []string {
	ids := make([]string, len(c.slots.Holders))
	for i, h := range c.slots.Holders {
		ids[i] = h.WorkflowID
	}
	return ids
}

// cancel asks a holder to cancel, saying why first (the run's
// cancel_reason).
func (c *coordinator) cancel(h contract.SlotRequest, why string) {
	c.told = append(c.told,
		workflow.SignalExternalWorkflow(c.ctx, h.WorkflowID, h.RunID, contract.SignalCancelReason, why),
		workflow.RequestCancelExternalWorkflow(c.ctx, h.WorkflowID, h.RunID))
}

// hold gives r a slot and watches for its end.
func (c *coordinator) hold(r contract.SlotRequest) {
	c.slots.Holders = append(c.slots.Holders, r)
	c.watch(r)
}

// grant gives the free slots to the first runs of the queue, and tells
// each. A run that ended while it waited is told nothing it can hear: its
// watch ends at once, and frees the slot again.
func (c *coordinator) grant() {
	for len(c.slots.Holders) < c.slots.Limit && len(c.slots.Queue) > 0 {
		r := c.slots.Queue[0]
		c.slots.Queue = c.slots.Queue[1:]
		c.hold(r)
		c.told = append(c.told, workflow.SignalExternalWorkflow(c.ctx, r.WorkflowID, r.RunID, contract.SignalSlotGranted, nil))
	}
}

// watch starts the activity that returns when h has ended, then frees its
// slot. It retries for as long as it takes: a watch lost with its worker
// starts again after its heartbeat timeout.
func (c *coordinator) watch(h contract.SlotRequest) {
	actx := workflow.WithActivityOptions(c.ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * 365 * 24 * time.Hour,
		HeartbeatTimeout:    watchHolderHeartbeat,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second},
		Summary:             "until run " + h.WorkflowID + " ends",
	})
	c.sel.AddFuture(workflow.ExecuteActivity(actx, contract.WatchHolderName, h), func(workflow.Future) {
		c.slots.Holders = slices.DeleteFunc(c.slots.Holders, h.SameRun)
		c.grant()
	})
}

// leave takes the runs that left the queue (cancelled while they waited)
// out of it.
func (c *coordinator) leave(ch workflow.ReceiveChannel) {
	var r contract.SlotRequest
	for ch.ReceiveAsync(&r) {
		c.slots.Queue = slices.DeleteFunc(c.slots.Queue, r.SameRun)
	}
}

// plural is one for a count of 1, else other (default: one + "s").
func plural(n int, one string, other ...string) string {
	switch {
	case n == 1:
		return one
	case len(other) > 0:
		return other[0]
	}
	return one + "s"
}
