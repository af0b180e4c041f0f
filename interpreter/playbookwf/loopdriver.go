package playbookwf

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"playbook/interpreter"
)

// LoopWorkflowName is the workflow type of a long loop's driver.
const LoopWorkflowName = "PlaybookLoop"

// versionLoopDriver: a loop longer than LoopBatchSize runs in one driver
// child (PlaybookLoop) that keeps max_in_flight elements running across
// the whole loop and continues as new as its history grows (before: batches
// of LoopBatchSize elements, one child after another, each waiting for its
// slowest element).
const versionLoopDriver = "loop-driver"

// loopHistoryEvents is the history length past which a driver starts no
// more elements, lets the running ones end, and continues as new.
const loopHistoryEvents = 10_000

// LoopInput is what a loop's driver gets: the playbook's text (for the
// step's definition), the part of the run's scope its list and tool read,
// and what every element's activity input shares. A run continued as new
// also gets where it is (Next) and what the runs before it counted.
type LoopInput struct {
	File   string                `json:"file"`
	Source string                `json:"source"`
	Step   string                `json:"step"`
	Scope  map[string]any        `json:"scope"`
	Common interpreter.StepInput `json:"common"`
	// CancelOnFailure: a failed element cancels the running ones and no
	// more start (failure_mode: cancel).
	CancelOnFailure bool `json:"cancel_on_failure,omitempty"`
	// FullIn says where the elements' results are when the step's result
	// is a stub.
	FullIn string                 `json:"full_in"`
	Next   int                    `json:"next,omitempty"`
	Tally  *interpreter.LoopTally `json:"tally,omitempty"`
}

// PlaybookLoop drives a loop's elements: up to max_in_flight running at
// once, the next starting as soon as one ends, whatever the loop's length.
// It returns the step's outcome (interpreter.LoopTally.Outcome).
func PlaybookLoop(ctx workflow.Context, in LoopInput) (*interpreter.Outcome, error) {
	pb := parseFrozen(Input{File: in.File, Source: in.Source})
	s := pb.Step(in.Step)
	if s == nil || s.Loop == nil || s.Tool == nil {
		o := interpreter.Outcome{Err: &interpreter.StepError{Type: interpreter.ErrLoop, Message: "the playbook has no loop step " + in.Step}}
		return &o, nil
	}
	items, err := pb.ElementItems(s, in.Scope)
	if err != nil {
		o := interpreter.Outcome{Err: &interpreter.StepError{Type: interpreter.ErrExpression, Message: err.Error()}}
		return &o, nil
	}
	if in.Tally == nil {
		// The first run renders every element before any starts, so that a
		// template that fails for one element fails the step before any ran.
		for i := range items {
			if _, err := pb.RenderElement(s, in.Scope, items, i); err != nil {
				o := interpreter.Outcome{Err: &interpreter.StepError{Type: interpreter.ErrTemplate, Message: err.Error()}}
				return &o, nil
			}
		}
		in.Tally = interpreter.NewLoopTally(len(items))
	}
	d := &loopDriver{ctx: ctx, pb: pb, s: s, in: in, items: items}
	if next, done := d.run(); !done {
		in.Next, in.Tally = next, d.in.Tally
		if interpreter.CheckPayload("the loop's tally", in) != nil {
			in.Tally.DropAttemptErrors()
		}
		return nil, workflow.NewContinueAsNewError(ctx, LoopWorkflowName, in)
	}
	o := d.in.Tally.Outcome(in.FullIn)
	if interpreter.CheckPayload("the loop's outcome", o) != nil {
		d.in.Tally.DropAttemptErrors()
		o = d.in.Tally.Outcome(in.FullIn)
	}
	return &o, nil
}

// loopDriver is one run of a loop's driver.
type loopDriver struct {
	ctx   workflow.Context
	pb    *interpreter.Playbook
	s     *interpreter.Step
	in    LoopInput
	items []any
}

// run starts elements from in.Next on, keeping max_in_flight running,
// until all have ended (done), or until the history is long enough to
// continue as new once the running ones have ended (next: the first not
// started). A cancelled driver, or a failed element with CancelOnFailure,
// cancels the running elements and counts the rest as not started.
func (d *loopDriver) run() (next int, done bool) {
	ctx, tally := d.ctx, d.in.Tally
	inner, cancelAll := workflow.WithCancel(ctx)
	defer cancelAll()
	sel := &waitSet{}
	inFlight, stopped := 0, false
	window := max(d.s.Loop.MaxInFlight, 1)
	info := workflow.GetInfo(ctx)
	full := func() bool {
		return info.GetCurrentHistoryLength() >= loopHistoryEvents || info.GetContinueAsNewSuggested()
	}
	next = d.in.Next
	for {
		// Each run starts at least one element, so that a run continued as
		// new always gets further than the one before.
		for inFlight < window && next < len(d.items) && !stopped && ctx.Err() == nil && (next == d.in.Next || !full()) {
			i := next
			next++
			elem, err := d.element(i)
			if err != nil {
				tally.Add(i, interpreter.Outcome{Err: err, Attempts: 0})
				if d.in.CancelOnFailure {
					stopped = true
				}
				continue
			}
			opts := activityOptions(d.s, elem)
			opts.ActivityID = elementName(d.s, i)
			opts.Summary = opts.ActivityID
			f := workflow.ExecuteActivity(workflow.WithActivityOptions(inner, opts), interpreter.RunStepName, elem)
			inFlight++
			sel.AddFuture(f, func(f workflow.Future) {
				inFlight--
				o := activityOutcome(ctx, f, d.s, elem)
				tally.Add(i, o)
				if d.in.CancelOnFailure && o.Err != nil && o.Err.Type != interpreter.ErrCancelled {
					stopped = true
					cancelAll()
				}
			})
		}
		if inFlight == 0 {
			break
		}
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("step %s: %s", d.s.Name, tally.Progress(inFlight)))
		sel.Select(ctx)
	}
	if next < len(d.items) && !stopped && ctx.Err() == nil {
		return next, false
	}
	for i := next; i < len(d.items); i++ {
		tally.Add(i, interpreter.Outcome{Err: &interpreter.StepError{Type: interpreter.ErrCancelled, Message: "not started"}})
	}
	return len(d.items), true
}

// element is element i's activity input: the shared one with its name and
// its rendered tool; an error when its input cannot be written.
func (d *loopDriver) element(i int) (interpreter.StepInput, *interpreter.StepError) {
	spec, err := d.pb.RenderElement(d.s, d.in.Scope, d.items, i)
	if err != nil {
		return interpreter.StepInput{}, &interpreter.StepError{Type: interpreter.ErrTemplate, Message: err.Error()}
	}
	elem := d.in.Common
	elem.Step, elem.Spec = elementName(d.s, i), spec
	if err := interpreter.CheckPayload("the input of "+elem.Step, elem); err != nil {
		return elem, err
	}
	return elem, nil
}

// startDriver runs a long loop in its driver, a child workflow, and
// returns a future of the step's interpreter.Outcome.
func (x *executor) startDriver(ctx workflow.Context, s *interpreter.Step, n int) (workflow.Future, *interpreter.StepError) {
	id := x.childID(ctx, s.Name+".loop", s.Name+"-loop")
	in := LoopInput{
		File: x.in.File, Source: x.in.Source, Step: s.Name,
		Scope:           x.run.LoopScope(s),
		Common:          x.stepInput(s, s.Name, nil),
		CancelOnFailure: x.run.Playbook().FailureMode == interpreter.FailureCancel,
		FullIn:          "each element's activity completion in the history of workflow " + id + ", the loop's driver, and of the runs it continued as new",
	}
	if err := interpreter.CheckPayload("the input of loop step "+s.Name, in); err != nil {
		return nil, err
	}
	x.run.SetLoopProgress(s.Name, interpreter.LoopProgress{Total: n, Running: min(n, max(s.Loop.MaxInFlight, 1))})
	opts := workflow.ChildWorkflowOptions{
		WorkflowID:          id,
		TaskQueue:           x.info.TaskQueueName,
		StaticSummary:       fmt.Sprintf("step %s: a loop of %d elements", s.Name, n),
		WaitForCancellation: true,
	}
	child := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, opts), LoopWorkflowName, in)
	f, settle := workflow.NewFuture(ctx)
	workflow.Go(ctx, func(ctx workflow.Context) {
		var o interpreter.Outcome
		err := child.Get(ctx, &o)
		var canErr *temporal.CanceledError
		switch {
		case errors.As(err, &canErr):
			o = interpreter.Outcome{Err: &interpreter.StepError{Type: interpreter.ErrCancelled, Message: "the loop was cancelled"}}
		case err != nil:
			o = interpreter.Outcome{Err: &interpreter.StepError{Type: interpreter.ErrLoop, Message: "the loop's driver " + id + " failed: " + err.Error()}}
		}
		settle.Set(o, nil)
	})
	return f, nil
}
