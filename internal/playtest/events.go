package playtest

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/testsuite"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
)

// events sends a case's events to its run, one after the other: each is
// armed when the one before it has been sent.
type events struct {
	env     *testsuite.TestWorkflowEnvironment
	log     *eventLog
	trace   *tracer
	start   time.Time
	mu      sync.Mutex
	pending []*Event
	// refused are events the run refused (an approval not waiting).
	refused []string
	seq     int
	early   int
}

// arm makes the first pending event fire when its moment comes.
func (ev *events) arm() {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.armLocked()
}

func (ev *events) armLocked() {
	if len(ev.pending) == 0 {
		return
	}
	e := ev.pending[0]
	switch {
	case e.After != nil:
		d := max(ev.start.Add(*e.After).Sub(ev.env.Now()), 0)
		ev.env.RegisterDelayedCallback(func() { ev.fire(e) }, d)
	case e.OnStart != "":
		// started fires it.
	case e.Kind == "cancel" || e.Kind == "drain":
		ev.env.RegisterDelayedCallback(func() { ev.fire(e) }, 0)
	default:
		ev.env.RegisterDelayedCallback(ev.check, 0)
	}
}

// started is told every activity and child workflow that starts; a
// pending event on_start of its step fires.
func (ev *events) started(id string) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if len(ev.pending) == 0 {
		return
	}
	e := ev.pending[0]
	if e.OnStart != "" && e.After == nil && (id == e.OnStart || strings.HasPrefix(id, e.OnStart+"[")) {
		ev.env.RegisterDelayedCallback(func() { ev.fire(e) }, 0)
	}
}

// check fires the first pending decision when its step waits for it.
// It runs in the test environment's main loop after whatever may have
// changed what the run waits for.
func (ev *events) check() {
	ev.mu.Lock()
	if len(ev.pending) == 0 || ev.env.IsWorkflowCompleted() {
		ev.mu.Unlock()
		return
	}
	e := ev.pending[0]
	ev.mu.Unlock()
	if e.After != nil || e.OnStart != "" || e.Kind == "cancel" || e.Kind == "drain" {
		return
	}
	waits, begun := ev.waits(e)
	switch {
	case waits:
		ev.fire(e)
	case ev.early < earlyChecks || !begun && ev.early < 100:
		// Asked before the run's first workflow tasks ran: ask again
		// after them, as nothing else may wake the run up (an approval
		// without a timeout as its first step).
		ev.early++
		ev.env.RegisterDelayedCallback(ev.check, 0)
	}
}

// earlyChecks is how many times a decision is looked for again at the
// run's start, while its first workflow tasks are queued behind the check.
const earlyChecks = 3

// waits says whether e's step waits for e: an approval for a decision, a
// pending_failed step for a classification.
func (ev *events) waits(e *Event) (waits, begun bool) {
	defer func() {
		// The test environment cannot answer a query before the run's
		// first workflow task.
		if recover() != nil {
			waits, begun = false, false
		}
	}()
	return ev.waitsFor(e), true
}

func (ev *events) waitsFor(e *Event) bool {
	if e.Kind == "send" {
		var agg contract.Aggregate
		if v, err := ev.env.QueryWorkflow(contract.QueryState); err == nil && v.Get(&agg) == nil {
			for _, st := range agg.Steps {
				if st.Waiting != nil && st.Waiting.For == "event "+e.Step {
					return true
				}
			}
		}
		return false
	}
	if e.Kind == "classify" {
		var pending []engine.PendingStep
		if v, err := ev.env.QueryWorkflow(contract.QueryPending); err == nil && v.Get(&pending) == nil {
			for _, p := range pending {
				if p.Step == e.Step {
					return true
				}
			}
		}
		return false
	}
	var waiting []engine.WaitingApproval
	if v, err := ev.env.QueryWorkflow(contract.QueryApprovals); err == nil && v.Get(&waiting) == nil {
		for _, w := range waiting {
			if w.Step == e.Step {
				return true
			}
		}
	}
	return false
}

// fire sends e to the run, then arms the next event.
func (ev *events) fire(e *Event) {
	ev.mu.Lock()
	if len(ev.pending) == 0 || ev.pending[0] != e {
		ev.mu.Unlock()
		return
	}
	ev.pending = ev.pending[1:]
	ev.seq++
	id := fmt.Sprintf("event-%d", ev.seq)
	ev.mu.Unlock()
	at := ev.env.Now().Sub(ev.start)
	by := orDefault(e.By, "playbook test")
	what := strings.TrimSpace(e.Kind + " " + e.Step)
	if e.As != "" {
		what += " as " + e.As
	}
	ev.trace.note(rootID, "given %s at %s", what, at)
	refused := func(err error) {
		ev.mu.Lock()
		ev.refused = append(ev.refused, fmt.Sprintf("event at line %d (%s %s) was refused by the run at %s: %v", e.Line, e.Kind, e.Step, at, err))
		ev.mu.Unlock()
	}
	callbacks := &updateCallbacks{onReject: refused, onComplete: func(err error) {
		if err != nil {
			refused(err)
		}
	}}
	switch e.Kind {
	case "approve", "reject":
		ev.log.add("%s %s %s (by %s)", at, e.Kind, e.Step, by)
		ev.env.UpdateWorkflow(contract.UpdateApproval, id, callbacks,
			contract.ApprovalDecision{Step: e.Step, Decision: e.Kind, Inputs: e.Inputs, By: e.By, Reason: e.Reason})
	case "classify":
		ev.log.add("%s classify %s as %s (by %s)", at, e.Step, e.As, by)
		result := ""
		if e.Result != nil {
			result = jsonText(e.Result)
		}
		ev.env.UpdateWorkflow(contract.UpdateClassify, id, callbacks, e.Step, e.As, e.Reason, by, result)
	case "send":
		ev.log.add("%s send event %s (by %s)", at, e.Step, by)
		ev.env.UpdateWorkflow(contract.UpdateEvent, id, callbacks, e.Step, e.Data, by)
	case "cancel":
		ev.log.add("%s cancel the run%s", at, because(e.Reason))
		if e.Reason != "" {
			ev.env.SignalWorkflow(contract.SignalCancelReason, e.Reason)
		}
		ev.env.CancelWorkflow()
	case "drain":
		ev.log.add("%s drain the run%s", at, because(e.Reason))
		ev.env.SignalWorkflow(contract.SignalDrain, e.Reason)
	case "deadline":
		// The run's own deadline timer fires at this moment (Suite.deadline).
		ev.log.add("%s the run's deadline passes", at)
	}
	ev.arm()
}

func because(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}

// why says what a pending event waited for.
func (ev *events) why(e *Event) string {
	switch {
	case e.After != nil:
		return fmt.Sprintf("the run ended before %s", *e.After)
	case e.OnStart != "":
		return fmt.Sprintf("step %q never started", e.OnStart)
	case e.Kind == "classify":
		return fmt.Sprintf("step %q never waited as pending_failed", e.Step)
	case e.Kind == "send":
		return fmt.Sprintf("no step ever waited for event %q", e.Step)
	}
	return fmt.Sprintf("approval step %q never waited", e.Step)
}

// updateCallbacks hears how the run took an Update.
type updateCallbacks struct {
	onReject   func(error)
	onComplete func(error)
}

func (c *updateCallbacks) Accept()                   {}
func (c *updateCallbacks) Reject(err error)          { c.onReject(err) }
func (c *updateCallbacks) Complete(_ any, err error) { c.onComplete(err) }
