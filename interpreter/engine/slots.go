package engine

import (
	"fmt"
	"slices"
	"strings"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// Slots is the run's scheduling policy around Ready: how many steps may
// run at once, which ready steps wait for a slot (in the order they became
// ready), a pending_failed step's pending_timeout, and whether the run has
// stalled. The workflow starts what Slots admits, tells it what ended, and
// starts the timers it asks for; the decisions are all here.
type Slots struct {
	run *Run
	// max is how many steps run at once; capped, asked the first time the
	// cap is reached, whether this run keeps to it (a run recorded before
	// the cap did not).
	max     int
	capped  func() bool
	capOn   *bool
	running int
	// queued are ready steps waiting for a slot.
	queued []*spec.Step
	// pendingGen counts each step's pending_failed spells, so that a
	// pending_timeout of an earlier spell (the step was retried and
	// failed again) does nothing.
	pendingGen map[string]int
}

// NewSlots keeps at most max steps of r running; capped is asked, once,
// when the cap is first reached.
func (r *Run) NewSlots(max int, capped func() bool) *Slots {
	return &Slots{run: r, max: max, capped: capped, pendingGen: map[string]int{}}
}

// Ready are the steps to consider now: first those that waited for a slot
// and may still start (Withdraw), as slots allow, then the run's newly
// ready ones. fresh tells whether the run had new ones: while it does,
// the workflow asks again.
func (q *Slots) Ready() (steps []*spec.Step, fresh bool) {
	for len(q.queued) > 0 && q.running < q.max {
		s := q.queued[0]
		q.queued = q.queued[1:]
		if !q.run.Withdraw(s) {
			steps = append(steps, s)
		}
	}
	more := q.run.Ready()
	return append(steps, more...), len(more) > 0
}

// Admit tells whether a step Ready gave is to start now. A step without a
// tool completes here; one over the cap waits for a slot.
func (q *Slots) Admit(s *spec.Step) bool {
	if s.Tool == nil {
		q.run.Complete(s.Name, nil, 0)
		return false
	}
	if q.running >= q.max && q.keepsCap() {
		q.queued = append(q.queued, s)
		return false
	}
	return true
}

// keepsCap asks capped the first time, then remembers.
func (q *Slots) keepsCap() bool {
	if q.capOn == nil {
		on := q.capped()
		q.capOn = &on
	}
	return *q.capOn
}

// Started counts a step the workflow started.
func (q *Slots) Started() { q.running++ }

// Ended frees the slot of a step that settled. When the step now waits in
// pending_failed and the playbook has a pending_timeout, it returns the
// spell's number, which the timer the workflow starts hands back to
// PendingTimedOut.
func (q *Slots) Ended(name string) (spell int, timer bool) {
	q.running--
	if q.run.State(name).Status != contract.StatusPendingFailed || q.run.pb.PendingTimeout <= 0 {
		return 0, false
	}
	q.pendingGen[name]++
	return q.pendingGen[name], true
}

// PendingTimedOut fails a step whose pending_timeout passed, if it still
// waits in the same pending_failed spell.
func (q *Slots) PendingTimedOut(name string, spell int) {
	if q.pendingGen[name] == spell && q.run.State(name).Status == contract.StatusPendingFailed {
		_ = q.run.Classify(name, ClassifyFail, "pending_timeout", "")
	}
}

// ToCancel are the running steps the workflow is to cancel now
// (Run.ToCancel). Those still waiting for a slot never started: they end
// cancelled here, and running tells the others apart.
func (q *Slots) ToCancel(running func(name string) bool) []string {
	var out []string
	for _, name := range q.run.ToCancel() {
		if running(name) {
			out = append(out, name)
			continue
		}
		q.queued = slices.DeleteFunc(q.queued, func(s *spec.Step) bool { return s.Name == name })
		q.run.Settle(name, contract.Outcome{Err: &contract.StepError{Type: contract.ErrCancelled, Message: "cancelled before it started"}})
	}
	return out
}

// Stalled is an error when the run can make no progress: nothing runs,
// nothing waits for a person, and end is not ready. It would be a bug of
// the engine; the workflow fails rather than wait for ever.
func (q *Slots) Stalled() error {
	if q.running == 0 && len(q.run.Pending()) == 0 {
		return fmt.Errorf("interpreter stalled: steps pending with nothing running: %s", strings.Join(q.run.Running(), ","))
	}
	return nil
}
