package playbookwf

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
	"playbook/interpreter/spec"
)

// LoopBatchInput is a batch of rendered loop elements: what they share
// once, and each one's rendered tool spec.
type LoopBatchInput struct {
	// Playbook is the frozen run input; the batch reads its step's options from it.
	Playbook        contract.Input     `json:"playbook"`
	Step            string             `json:"step"`
	First           int                `json:"first"`
	Common          contract.StepInput `json:"common"`
	Specs           []map[string]any   `json:"specs"`
	MaxInFlight     int                `json:"max_in_flight"`
	CancelOnFailure bool               `json:"cancel_on_failure"`
}

// PlaybookLoopBatch runs a batch of loop elements and returns each one's
// outcome, in order.
func PlaybookLoopBatch(ctx workflow.Context, in LoopBatchInput) ([]contract.Outcome, error) {
	pb := parseFrozen(ctx, in.Playbook)
	s := pb.Step(in.Step)
	if s == nil || s.Loop == nil {
		return nil, temporal.NewNonRetryableApplicationError("no loop step "+in.Step, "InvalidPlaybook", nil)
	}
	elems := make([]contract.StepInput, len(in.Specs))
	for i, toolSpec := range in.Specs {
		elems[i] = in.Common
		elems[i].Step, elems[i].Spec = elementName(s, in.First+i), toolSpec
	}
	return contract.BoundOutcomes(runElements(ctx, s, elems, in.First, in.MaxInFlight, in.CancelOnFailure, nil, nil)), nil
}

// startLoop runs a loop step's elements: inline when they fit in one batch,
// else batch after batch as child workflows. The returned future yields the
// combined contract.Outcome.
func (x *executor) startLoop(ctx workflow.Context, s *spec.Step) (workflow.Future, *contract.StepError) {
	items, stepErr := x.loopItems(s)
	if stepErr != nil {
		return nil, stepErr
	}
	// Asked only for a loop longer than a batch, where the two ways part.
	if len(items) > contract.LoopBatchSize && version(x.ctx, changeLoopDriver) >= 1 {
		return x.startDriver(ctx, s, len(items))
	}
	specs, stepErr := x.renderItems(s, items)
	if stepErr != nil {
		return nil, stepErr
	}
	common := x.stepInput(s, s.Name, nil)
	var err error
	if common.Files, err = x.run.RenderFiles(s); err != nil {
		return nil, &contract.StepError{Type: contract.ErrTemplate, Message: err.Error()}
	}
	elems := make([]contract.StepInput, len(specs))
	for i, toolSpec := range specs {
		elems[i] = elementInput(common, s, i, items[i], toolSpec)
		if err := x.tooLarge("the input of "+elems[i].Step, elems[i]); err != nil {
			return nil, err
		}
	}
	cancelOnFailure := cancelsElements(x.run.Playbook(), s)
	// Progress is shown by queries and the current details, never recorded.
	progress := func(p contract.LoopProgress) {
		x.run.SetLoopProgress(s.Name, p)
		workflow.SetCurrentDetails(x.ctx, x.run.DetailsMarkdown())
	}
	f, settle := workflow.NewFuture(ctx)
	workflow.Go(ctx, func(ctx workflow.Context) {
		if len(elems) <= contract.LoopBatchSize {
			settle.Set(engine.CombineLoop(runElements(ctx, s, elems, 0, s.Loop.MaxInFlight, cancelOnFailure, progress, x.reusedElements(s, len(elems)))), nil)
			return
		}
		outcomes := make([]contract.Outcome, 0, len(elems))
		for first := 0; first < len(elems); first += contract.LoopBatchSize {
			batch := elems[first:min(first+contract.LoopBatchSize, len(elems))]
			if ctx.Err() != nil || (cancelOnFailure && anyFailed(outcomes)) {
				outcomes = append(outcomes, notStarted(len(batch))...)
				continue
			}
			// A batch runs up to max_in_flight of its elements at once.
			p := contract.LoopProgress{Total: len(elems), Running: min(len(batch), max(s.Loop.MaxInFlight, 1))}
			p.Add(outcomes...)
			progress(p)
			outcomes = append(outcomes, x.runBatch(ctx, s, first, batch, cancelOnFailure)...)
		}
		settle.Set(engine.CombineLoop(outcomes), nil)
	})
	return f, nil
}

// loopItems evaluates a loop's list, within the bound on its length.
func (x *executor) loopItems(s *spec.Step) ([]any, *contract.StepError) {
	items, err := x.run.LoopItems(s)
	if err != nil {
		return nil, &contract.StepError{Type: contract.ErrExpression, Message: err.Error()}
	}
	if err := spec.CheckLoopSize(len(items)); err != nil {
		// Asked only when the bound applies, so runs under it record no marker.
		if version(x.ctx, changeLoopSizeBound) >= 1 {
			return nil, &contract.StepError{Type: contract.ErrExpression, Message: err.Error()}
		}
	}
	return items, nil
}

// renderItems renders a loop's tool once per element of its list.
func (x *executor) renderItems(s *spec.Step, items []any) ([]map[string]any, *contract.StepError) {
	specs, err := x.run.RenderLoop(s, items)
	if err != nil {
		return nil, &contract.StepError{Type: contract.ErrTemplate, Message: err.Error()}
	}
	return specs, nil
}

// runBatch runs one batch as a child workflow; a batch that could not run
// gives each of its elements the batch's error.
func (x *executor) runBatch(ctx workflow.Context, s *spec.Step, first int, batch []contract.StepInput, cancelOnFailure bool) []contract.Outcome {
	opts := workflow.ChildWorkflowOptions{
		WorkflowID:          x.childID(ctx, fmt.Sprintf("%s.batch-%d", s.Name, first/contract.LoopBatchSize), fmt.Sprintf("%s-batch-%d", s.Name, first/contract.LoopBatchSize)),
		TaskQueue:           x.info.TaskQueueName,
		StaticSummary:       fmt.Sprintf("step %s: elements %d to %d", s.Name, first, first+len(batch)-1),
		WaitForCancellation: true,
	}
	in := LoopBatchInput{Playbook: x.in, Step: s.Name, First: first, Common: batch[0], MaxInFlight: s.Loop.MaxInFlight, CancelOnFailure: cancelOnFailure}
	in.Common.Spec = nil
	for _, e := range batch {
		in.Specs = append(in.Specs, e.Spec)
	}
	var out []contract.Outcome
	err := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, opts), contract.LoopBatchWorkflowName, in).Get(ctx, &out)
	if err == nil && len(out) == len(batch) {
		return out
	}
	stepErr := &contract.StepError{Type: contract.ErrLoop, Message: fmt.Sprintf("batch of elements %d to %d (index %d to %d): %v", first+1, first+len(batch), first, first+len(batch)-1, err)}
	var canErr *temporal.CanceledError
	if errors.As(err, &canErr) {
		stepErr.Type = contract.ErrCancelled
	}
	out = make([]contract.Outcome, len(batch))
	for i := range out {
		out[i] = contract.Outcome{Err: stepErr}
	}
	return out
}

// runElements runs loop elements as activities, up to maxInFlight at once,
// and returns their outcomes in order. With cancelOnFailure, a failed
// element cancels the ones in flight and starts no more.
// With progress, it reports the elements' counts as they start and end.
// The elements reused (a retry's) are not run: their outcome is their
// earlier result.
func runElements(ctx workflow.Context, s *spec.Step, elems []contract.StepInput, first, maxInFlight int, cancelOnFailure bool, progress func(contract.LoopProgress), reused *contract.ElementReuse) []contract.Outcome {
	inner, cancelAll := workflow.WithCancel(ctx)
	defer cancelAll()
	out := make([]contract.Outcome, len(elems))
	sel := workflow.NewSelector(ctx)
	add := func(f workflow.Future, fn func(workflow.Future)) { sel.AddFuture(f, fn) }
	next, inFlight, stopped := 0, 0, false
	counts := contract.LoopProgress{Total: len(elems)}
	spans := newElementSpans(ctx)
	defer spans.flush(ctx)
	var direct directElements
	for i := range elems {
		if reused.Has(i) {
			out[i] = contract.Outcome{Result: reused.Results[i], Files: reused.Files[i]}
			counts.Add(out[i])
		}
	}
	for {
		for inFlight < max(maxInFlight, 1) && next < len(elems) && !stopped && ctx.Err() == nil {
			i := next
			next++
			if reused.Has(i) {
				continue
			}
			e := startElement(inner, s, elems[i], elementName(s, first+i), direct.of(ctx, s))
			spans.started(ctx, first+i)
			inFlight++
			e.awaitOn(ctx, add, func(o contract.Outcome) {
				inFlight--
				out[i] = o
				spans.ended(ctx, elems[i], first+i, out[i])
				counts.Add(out[i])
				if cancelOnFailure && out[i].Err != nil && out[i].Err.Type != contract.ErrCancelled {
					stopped = true
					cancelAll()
				}
			})
		}
		if inFlight == 0 {
			break
		}
		if progress != nil {
			counts.Running = inFlight
			progress(counts)
		}
		spans.flush(ctx) // the elements that ended, as the loop waits
		sel.Select(ctx)
	}
	for i := next; i < len(elems); i++ {
		if !reused.Has(i) {
			out[i] = notStarted(1)[0]
		}
	}
	return out
}

// reusedElements are the elements of loop step s, of n, that a retry
// reuses in this workflow: nil when none, or when they came without their
// results (which a loop run here returns), or on the old side of
// reuse-elements.
func (x *executor) reusedElements(s *spec.Step, n int) *contract.ElementReuse {
	if r := x.in.ReuseElements[s.Name]; r != nil && r.Truncated {
		return nil
	}
	return x.elementsReused(s, n)
}

// elementsReused are the elements of loop step s, of n, that a retry
// reuses; nil when none, or when they were counted on a list of another
// length. The version of reuse-elements is asked only when some are, so
// that a run without them records no marker; a run from before the
// change (a worker that ignored the input's reused elements) reuses none.
func (x *executor) elementsReused(s *spec.Step, n int) *contract.ElementReuse {
	r := x.in.ReuseElements[s.Name]
	if r == nil || r.Total != n || len(r.Spans) == 0 || version(x.ctx, changeReuseElements) == workflow.DefaultVersion {
		return nil
	}
	return r
}

func elementName(s *spec.Step, i int) string { return fmt.Sprintf("%s[%d]", s.Name, i) }

// elementInput is element i's activity input: what every element of the
// loop shares (the step's own input), with the element's name, item and
// tool.
func elementInput(common contract.StepInput, s *spec.Step, i int, item any, toolSpec map[string]any) contract.StepInput {
	common.Step, common.Spec, common.ItemSHA256 = elementName(s, i), toolSpec, contract.ItemDigest(item)
	return common
}

func notStarted(n int) []contract.Outcome {
	out := make([]contract.Outcome, n)
	for i := range out {
		out[i] = contract.Outcome{Err: &contract.StepError{Type: contract.ErrCancelled, Message: "not started"}}
	}
	return out
}

func anyFailed(outcomes []contract.Outcome) bool {
	for _, o := range outcomes {
		if o.Err != nil && o.Err.Type != contract.ErrCancelled {
			return true
		}
	}
	return false
}

// cancelsElements tells whether a failed element of a loop step cancels
// its other elements: under failure_mode cancel, unless the step is
// allowed to fail, on which failure_mode does not act, or is a cleanup
// step, which nothing cancels (a playbook from before allow_failure and
// on_cancel has no such step).
func cancelsElements(pb *spec.Playbook, s *spec.Step) bool {
	return pb.FailureMode == spec.FailureCancel && !s.AllowFailure && !s.OnCancelRun
}
