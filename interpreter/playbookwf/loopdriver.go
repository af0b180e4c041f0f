package playbookwf

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
	"playbook/interpreter/spec"
)

// loopHistoryEvents is the history length past which a driver starts no
// more elements, lets the running ones end (each adds two or three
// events), and continues as new: far below the server's limit of 50 Ki
// events, and near its warning at 10 Ki (a wide window ends a little past
// it). It does so sooner when the server suggests it for another reason
// than the count (its size: 4 MiB by default); the server's count it
// leaves to this bound, since each run's end lets the loop's window run
// dry (version loop-own-count), unless the server suggests it below its
// default count (serverSuggestedCount): an operator lowered the limits.
const loopHistoryEvents = 10_000

// serverSuggestedCount is the history length at which a Temporal server
// suggests continuing as new by default (limit.historyCount.
// suggestContinueAsNew); its suggestion comes at this length or later.
const serverSuggestedCount = 4 * 1024

// maxLoopWindow bounds the elements a driver keeps running: Temporal
// fails a workflow task that would leave more than 2,000 activities
// pending (limit.numPendingActivities.error), again on every attempt.
const maxLoopWindow = 1000

// PlaybookLoop drives a loop's elements: up to max_in_flight running at
// once, the next starting as soon as one ends, whatever the loop's length.
// It returns the step's outcome (contract.LoopTally.Outcome).
func PlaybookLoop(ctx workflow.Context, in contract.LoopInput) (*contract.Outcome, error) {
	pb := parseFrozen(ctx, contract.Input{File: in.File, Source: in.Source})
	s := pb.Step(in.Step)
	if s == nil || s.Loop == nil || s.Tool == nil {
		o := contract.Outcome{Err: &contract.StepError{Type: contract.ErrLoop, Message: "the playbook has no loop step " + in.Step}}
		return &o, nil
	}
	scope := engine.DriverScope(pb, in.Scope, in.Workload)
	stubs := engine.ScopeStubs(scope, readsStubs(ctx, &in))
	items, err := engine.ElementItems(s, scope, stubs)
	if err != nil {
		o := contract.Outcome{Err: &contract.StepError{Type: contract.ErrExpression, Message: err.Error()}}
		return &o, nil
	}
	if in.Tally == nil {
		// The first run renders every element before any starts, so that a
		// template that fails for one element fails the step before any ran;
		// yielding now and then to the deadlock detector.
		for i := range items {
			if i%loopYieldEvery == loopYieldEvery-1 {
				yield(ctx)
			}
			if _, err := engine.RenderElement(pb, s, scope, items, i, stubs); err != nil {
				o := contract.Outcome{Err: &contract.StepError{Type: contract.ErrTemplate, Message: err.Error()}}
				return &o, nil
			}
		}
		in.Tally = contract.NewLoopTally(len(items))
		in.Reuse = reuseIn(in.Tally, in.Reuse)
	}
	d := &loopDriver{ctx: ctx, pb: pb, s: s, in: in, scope: scope, items: items, stubs: stubs}
	next, done := d.run()
	d.awaitReports()
	if !done {
		in.Next, in.Tally = next, d.in.Tally
		fit(in.Tally, func() any { return in })
		return nil, workflow.NewContinueAsNewError(ctx, contract.LoopWorkflowName, in)
	}
	var o contract.Outcome
	fit(d.in.Tally, func() any { o = d.in.Tally.Outcome(in.FullIn); return o })
	return &o, nil
}

// loopDriver is one run of a loop's driver.
type loopDriver struct {
	ctx   workflow.Context
	pb    *spec.Playbook
	s     *spec.Step
	in    contract.LoopInput
	scope map[string]any
	items []any
	// stubs is how the elements read stubs (engine.ScopeStubs).
	stubs engine.Stubs
	// reported is when the driver last reported its progress, and
	// reportedIn the history's length in the task that did.
	reported   time.Time
	reportedIn int
	// reports are the progress signals sent that may not be delivered yet
	// (awaitReports).
	reports []workflow.Future
	// ownCount is nil until the version of loop-own-count is asked (full).
	ownCount *bool
}

// full says whether the driver's history is long enough that this run
// starts no more elements: loopHistoryEvents, or the server's suggestion
// for any reason but the event count alone, or for the count before the
// server's default count (a server whose limits were lowered). On the old
// side of loop-own-count, the server's suggestion for its count too.
func (d *loopDriver) full() bool {
	info := workflow.GetInfo(d.ctx)
	length := info.GetCurrentHistoryLength()
	if length >= loopHistoryEvents {
		return true
	}
	if !info.GetContinueAsNewSuggested() {
		return false
	}
	reasons := info.GetContinueAsNewSuggestedReasons()
	countOnly := len(reasons) > 0 && !slices.ContainsFunc(reasons, func(r workflow.ContinueAsNewSuggestedReason) bool {
		return r != workflow.ContinueAsNewSuggestedReasonTooManyHistoryEvents
	})
	if !countOnly || length < serverSuggestedCount {
		return true
	}
	if d.ownCount == nil {
		v := version(d.ctx, changeLoopOwnCount) >= 1
		d.ownCount = &v
	}
	return !*d.ownCount
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
	window := min(max(d.s.Loop.MaxInFlight, 1), maxLoopWindow)
	next = d.in.Next
	first := next
	spans := newElementSpans(ctx)
	defer spans.flush(ctx)
	share := &taskShare{local: d.s.Local}
	var direct directElements
	var nextTask workflow.Future // the timer that brings the next task, while it runs
	for {
		// Each run starts at least one element, so that a run continued as
		// new always gets further than the one before.
		for inFlight < window && next < len(d.items) && !stopped && ctx.Err() == nil && (next == first || !d.full()) {
			if share.spent(ctx, inFlight) {
				// The task ends once the running elements have; a timer
				// brings the next, which starts more.
				if nextTask == nil {
					nextTask = workflow.NewTimerWithOptions(ctx, time.Millisecond, workflow.TimerOptions{Summary: "next task of step " + d.s.Name})
					sel.AddFuture(nextTask, func(workflow.Future) { nextTask = nil; share.renew() })
				}
				break
			}
			i := next
			next++
			if d.in.Reuse.Has(i) {
				if next-1 == first {
					first = next // a run still starts at least one element
				}
				continue
			}
			elem, err := d.element(i)
			if err != nil {
				tally.Add(i, contract.Outcome{Err: err, Attempts: 0})
				if d.in.CancelOnFailure {
					stopped = true
					cancelAll()
				}
				continue
			}
			e := startElement(inner, d.s, elem, elementName(d.s, i), direct.of(ctx, d.s))
			spans.started(ctx, i)
			inFlight++
			e.awaitOn(ctx, sel.AddFuture, func(o contract.Outcome) {
				inFlight--
				share.ended(ctx, o)
				spans.ended(ctx, elem, i, o)
				tally.Add(i, o)
				if d.in.CancelOnFailure && o.Err != nil && o.Err.Type != contract.ErrCancelled {
					stopped = true
					cancelAll()
				}
			})
		}
		if inFlight == 0 && nextTask == nil {
			break
		}
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("step %s: %s", d.s.Name, tally.Progress(inFlight)))
		d.report(tally.Progress(inFlight))
		spans.flush(ctx) // the elements that ended, as the loop waits
		sel.Select(ctx)
	}
	if next < len(d.items) && !stopped && ctx.Err() == nil {
		return next, false
	}
	for i := next; i < len(d.items); i++ {
		if !d.in.Reuse.Has(i) {
			tally.Add(i, contract.Outcome{Err: &contract.StepError{Type: contract.ErrCancelled, Message: "not started"}})
		}
	}
	return len(d.items), true
}

// LocalTaskElements and LocalTaskBytes are a workflow task's share of a
// driver's local elements: it starts none while the elements that ended
// in the task and those running add up to LocalTaskElements, or once the
// outcomes of those that ended reach LocalTaskBytes. The SDK keeps a task
// open while a local activity runs, and its completion carries a marker
// with each one's outcome: uncapped, a task ran elements until the SDK
// renewed it, 80% of its timeout later; on a starved worker its end and
// its retries' replays overran the timeout, and the next retry came
// later each time, and a task of large results was over the 4 MiB a
// request to the server may hold. A share of `true` elements is about
// 350 KiB of markers, and a few seconds' work.
const (
	LocalTaskElements = 1000
	LocalTaskBytes    = 1 << 20
)

// localLoopTaskTimeout is the workflow task timeout of a driver of local
// elements (10s by default): a task that runs its share, or replays the
// driver's history after a retry, on a starved worker fits in it. The SDK
// renews a task at 80% of it, and a task lost with its worker is retried
// that much later.
const localLoopTaskTimeout = time.Minute

// taskShare counts what a driver's current workflow task has taken of
// its share of local elements (LocalTaskElements, LocalTaskBytes).
type taskShare struct {
	local bool
	// capped is nil until the version is asked, where the share first
	// runs out.
	capped *bool
	// task is the history's length in the task counted: another length,
	// another task (the SDK renewed one, or a timer brought it).
	task       int
	done, size int
}

// spent tells whether the current task has taken its share, inFlight
// running (each to end in it, or in a renewal of it).
func (s *taskShare) spent(ctx workflow.Context, inFlight int) bool {
	if !s.local {
		return false
	}
	s.turn(ctx)
	if s.done+inFlight < LocalTaskElements && s.size < LocalTaskBytes {
		return false
	}
	if s.capped == nil {
		v := version(ctx, changeLocalTaskCap) >= 1
		s.capped = &v
	}
	return *s.capped
}

// ended counts an element's outcome against the current task's share:
// its marker goes with the task's completion.
func (s *taskShare) ended(ctx workflow.Context, o contract.Outcome) {
	if !s.local || (s.capped != nil && !*s.capped) {
		return
	}
	s.turn(ctx)
	n, _ := contract.EncodedSize(o)
	s.done, s.size = s.done+1, s.size+n
}

// turn starts a new count when the task is another.
func (s *taskShare) turn(ctx workflow.Context) {
	if n := workflow.GetInfo(ctx).GetCurrentHistoryLength(); n != s.task {
		s.task, s.done, s.size = n, 0, 0
	}
}

// renew starts a new count: the timer that brings a new task fired (the
// SDK's test environment keeps one history length throughout).
func (s *taskShare) renew() { s.done, s.size = 0, 0 }

// reuseIn counts the elements a retry reuses in a driver's first tally,
// and returns what its later runs carry of them: their spans. Reuse
// counted on a list of another length reuses nothing. Reuse whose results
// the run keeps (Kept) counts them done without them; from a run before
// that, the driver's input carried the results, and the tally keeps them.
func reuseIn(t *contract.LoopTally, r *contract.ElementReuse) *contract.ElementReuse {
	if r == nil || r.Total != t.Total {
		return nil
	}
	if r.Truncated {
		t.Truncate()
	}
	if r.Kept {
		t.AddKept(r.Count(), r.ResultBytes)
		return r
	}
	for _, sp := range r.Spans {
		for i := sp[0]; i < sp[1]; i++ {
			t.Add(i, contract.Outcome{Result: r.Results[i]})
		}
	}
	return &contract.ElementReuse{Total: r.Total, Spans: r.Spans, Earlier: r.Earlier}
}

// progressEvery is how often, in the driver's workflow time, it tells
// its run how far the loop is.
const progressEvery = 2 * time.Second

// report signals the loop's progress to the run that started the driver,
// at most every progressEvery: `status`, `run` and the run's Web UI
// details show it. The signal is not waited for. On the new side of
// loop-reports-delivered a workflow task sends one at most while the one
// before is not delivered: a task of local elements runs for seconds and
// sends its signals as it ends, each delivery is one more task of the
// driver's, which its last awaits (awaitReports). The one a task sends is
// the progress when it first reported, so what the run shows may be a
// task behind (seconds); the loop's end tells the rest.
func (d *loopDriver) report(p contract.LoopProgress) {
	info := workflow.GetInfo(d.ctx)
	if info.ParentWorkflowExecution == nil || workflow.Now(d.ctx).Sub(d.reported) < progressEvery {
		return
	}
	d.reports = slices.DeleteFunc(d.reports, workflow.Future.IsReady)
	if len(d.reports) > 0 && info.GetCurrentHistoryLength() == d.reportedIn && version(d.ctx, changeReportsDelivered) >= 1 {
		return
	}
	d.reported, d.reportedIn = workflow.Now(d.ctx), info.GetCurrentHistoryLength()
	d.reports = append(d.reports, workflow.SignalExternalWorkflow(d.ctx, info.ParentWorkflowExecution.ID, "", contract.SignalLoopProgress,
		contract.LoopProgressSignal{Step: d.s.Name, Progress: p}))
}

// awaitReports waits, before the driver completes or continues as new,
// until the server has delivered every progress signal it sent. Each
// delivery adds an event to the driver's history, and the server refuses
// a workflow task that would close the driver when an event arrived while
// it ran (UnhandledCommand): every local activity that task ran is lost,
// and runs again. A task of local elements stays open until its heartbeat
// (8 s) and a report goes every progressEvery, so the report sent with the
// last heartbeat arrived during the closing task nearly every time (a loop
// of 600 local elements ran 152 of them twice). Waiting ends the task of
// the last elements without closing the driver, and closes it in the task
// the last delivery brings.
func (d *loopDriver) awaitReports() {
	d.reports = slices.DeleteFunc(d.reports, workflow.Future.IsReady)
	if len(d.reports) == 0 || version(d.ctx, changeReportsDelivered) == workflow.DefaultVersion {
		return
	}
	// A cancelled driver waits too: its parent waits for it (WaitForCancellation).
	ctx, _ := workflow.NewDisconnectedContext(d.ctx)
	_ = workflow.Await(ctx, func() bool {
		return !slices.ContainsFunc(d.reports, func(f workflow.Future) bool { return !f.IsReady() })
	})
}

// element is element i's activity input: the shared one with its name and
// its rendered tool; an error when its input cannot be written.
func (d *loopDriver) element(i int) (contract.StepInput, *contract.StepError) {
	toolSpec, err := engine.RenderElement(d.pb, d.s, d.scope, d.items, i, d.stubs)
	if err != nil {
		return contract.StepInput{}, &contract.StepError{Type: contract.ErrTemplate, Message: err.Error()}
	}
	elem := elementInput(d.in.Common, d.s, i, d.items[i], toolSpec)
	if err := contract.BudgetsFor(d.in.Common.LargeValues).Check("the input of "+elem.Step, elem); err != nil {
		return elem, err
	}
	return elem, nil
}

// startDriver runs a long loop in its driver, a child workflow, and
// returns a future of the step's contract.Outcome.
func (x *executor) startDriver(ctx workflow.Context, s *spec.Step, n int) (workflow.Future, *contract.StepError) {
	id := x.childID(ctx, s.Name+".loop", s.Name+"-loop")
	in := contract.LoopInput{
		File: x.in.File, Source: x.in.Source, Step: s.Name,
		Scope:           x.run.LoopScope(s),
		Workload:        x.in.Workload,
		Common:          x.stepInput(s, s.Name, nil),
		CancelOnFailure: cancelsElements(x.run.Playbook(), s),
		FullIn:          "each element's activity completion in the history of workflow " + id + ", the loop's driver, and of the runs it continued as new",
	}
	if x.run.LoopStubs(s).Guard {
		// Its elements read a stub: the driver takes the run's side of
		// "truncated-reads", not a side of its own.
		old := version(ctx, changeTruncatedReads) == workflow.DefaultVersion
		in.StubsAsWritten = &old
	}
	// The run's input holds the reused results: the driver gets only their
	// spans, and they go into the loop's result here, so that the run's
	// history carries them once.
	reused := x.elementsReused(s, n)
	if reused != nil {
		in.Reuse = reused.Carried()
	}
	var err error
	if in.Common.Files, err = x.run.RenderFiles(s); err != nil {
		return nil, &contract.StepError{Type: contract.ErrTemplate, Message: err.Error()}
	}
	if in.Reuse != nil && in.Reuse.Earlier != "" {
		in.FullIn += "; of the elements reused, in " + in.Reuse.Earlier
	}
	if err := contract.BudgetsFor(x.in.LargeValues).Check("the input of loop step "+s.Name, in); err != nil {
		return nil, err
	}
	x.run.SetLoopProgress(s.Name, contract.LoopProgress{Total: n, Running: min(n, max(s.Loop.MaxInFlight, 1))})
	opts := workflow.ChildWorkflowOptions{
		WorkflowID:          id,
		TaskQueue:           x.info.TaskQueueName,
		StaticSummary:       fmt.Sprintf("step %s: a loop of %d elements", s.Name, n),
		WaitForCancellation: true,
	}
	if s.Local {
		opts.WorkflowTaskTimeout = localLoopTaskTimeout
	}
	child := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, opts), contract.LoopWorkflowName, in)
	f, settle := workflow.NewFuture(ctx)
	workflow.Go(ctx, func(ctx workflow.Context) {
		var o contract.Outcome
		err := child.Get(ctx, &o)
		var canErr *temporal.CanceledError
		switch {
		case errors.As(err, &canErr):
			o = contract.Outcome{Err: &contract.StepError{Type: contract.ErrCancelled, Message: "the loop was cancelled"}}
		case err != nil:
			o = contract.Outcome{Err: &contract.StepError{Type: contract.ErrLoop, Message: "the loop's driver " + id + " failed: " + err.Error()}}
		case o.Err == nil:
			o.Result, o.Files = reused.FillIn(o.Result), reused.FillInFiles(o.Files)
		}
		settle.Set(o, nil)
	})
	return f, nil
}

// loopYieldEvery is how many elements a driver renders between yields.
const loopYieldEvery = 1000

// yield lets the SDK's dispatcher run the workflow's other coroutines and
// see this one make progress; it issues no command of its own.
func yield(ctx workflow.Context) {
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	yielded := false
	workflow.Go(ctx, func(workflow.Context) { yielded = true })
	_ = workflow.Await(ctx, func() bool { return yielded })
}

// fit shrinks a tally until what carries it (made) fits one payload: its
// attempt records go first, then its results.
func fit(t *contract.LoopTally, made func() any) {
	for _, shrink := range []func(){t.DropAttemptErrors, t.Truncate} {
		if contract.CheckPayload("", made()) == nil {
			return
		}
		shrink()
	}
	made()
}
