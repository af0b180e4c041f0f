package runs

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
	"playbook/interpreter/spec"
)

// planRetry is engine.PlanReuse, and what the new run reuses within the
// steps that run for themselves because they did not complete before:
// the completed elements of a loop, the completed steps of a sub-playbook
// step's child, recursively (its plan goes under the step's decision).
func planRetry(ctx context.Context, c Client, stored *filesLeft, earlierID string, before contract.Input, oldSide, newSide engine.RetrySide, earlier map[string]*contract.StepState, from string) (*engine.ReusePlan, *contract.ChildReuse, error) {
	// A step whose files are gone runs again when a step that runs takes
	// them: planned again until no more are (each pass may run more).
	gone := stored.goneSteps(ctx, earlier)
	var plan *engine.ReusePlan
	for pass := 0; ; pass++ {
		var err error
		if plan, err = engine.PlanReuse(oldSide, newSide, earlier, from); err != nil {
			return nil, nil, &InvalidError{Err: err}
		}
		// Each pass runs more steps, which take more files: at most one
		// pass a gone step, and a bound all the same.
		taken := takenGone(newSide.Playbook, plan, gone)
		if maps.Equal(taken, oldSide.FilesGone) || pass > len(gone) {
			break
		}
		oldSide.FilesGone = taken
	}
	var err error
	r := &contract.ChildReuse{RetryOf: earlierID, Reuse: plan.Reuse}
	if r.ReuseElements, err = planElements(ctx, c, stored.only(takenBy(newSide.Playbook, plan)), earlierID, before, newSide, plan); err != nil {
		return nil, nil, err
	}
	if r.ReuseChildren, err = planChildren(ctx, c, stored, earlierID, oldSide, newSide, plan); err != nil {
		return nil, nil, err
	}
	return plan, r, nil
}

// planChildren plans, for each sub-playbook step the plan runs only
// because it did not complete before, a retry of its child in the earlier
// run: the child's playbook now (the new run's frozen sub-playbook), its
// workload as the earlier child had it (the step's templates and what
// they read are unchanged), the child's steps reused by the same rules.
func planChildren(ctx context.Context, c Client, stored *filesLeft, earlierID string, oldSide, newSide engine.RetrySide, plan *engine.ReusePlan) (map[string]*contract.ChildReuse, error) {
	var out map[string]*contract.ChildReuse
	for i, d := range plan.Decisions {
		s := newSide.Playbook.Step(d.Step)
		if !plan.RunsForItself(newSide.Playbook, d.Step) || s.Tool.Kind != "playbook" || s.Loop != nil {
			continue
		}
		rel, _ := s.Tool.Spec["path"].(string)
		newPath := spec.SubPlaybookPath(newSide.BaseDir, rel)
		newSrc, ok := newSide.Texts[newPath]
		if !ok {
			continue
		}
		childID, childIn, err := earlierChild(ctx, c, earlierID, d.Step)
		if err != nil {
			continue // no child ran: it runs whole
		}
		agg, err := Result(ctx, c.GetWorkflow(ctx, childID, ""))
		if err != nil {
			continue
		}
		oldPb, err1 := spec.Parse(childIn.File, []byte(childIn.Source))
		newPb, err2 := spec.Parse(newPath, []byte(newSrc))
		if err1 != nil || err2 != nil {
			continue
		}
		childOld := engine.RetrySide{Playbook: oldPb, Definitions: spec.StepDefinitions([]byte(childIn.Source)),
			Workload: spec.MergeWorkload(oldPb.Workload, childIn.Workload), BaseDir: childIn.BaseDir, Texts: childIn.Files,
			Files: oldSide.Files, LogicalTime: oldSide.LogicalTime, RunID: childID}
		childNow := engine.RetrySide{Playbook: newPb, Definitions: spec.StepDefinitions([]byte(newSrc)),
			Workload: spec.MergeWorkload(newPb.Workload, childIn.Workload), BaseDir: filepath.Dir(newPath), Texts: newSide.Texts,
			Files: newSide.Files, LogicalTime: newSide.LogicalTime, RunID: newSide.RunID + "." + d.Step}
		cplan, cr, err := planRetry(ctx, c, stored, childID, childIn, childOld, childNow, contract.Reusable(agg), "")
		if err != nil {
			var mistake *InvalidError
			if errors.As(err, &mistake) {
				continue
			}
			return nil, err
		}
		if len(cr.Reuse) == 0 && len(cr.ReuseElements) == 0 && len(cr.ReuseChildren) == 0 {
			continue
		}
		if out == nil {
			out = map[string]*contract.ChildReuse{}
		}
		out[d.Step] = cr
		plan.Decisions[i].Child = cplan.Decisions
	}
	return out, nil
}

// earlierChild is the child a sub-playbook step started in run parent,
// and its input (either side of child-id-dot).
func earlierChild(ctx context.Context, c Client, parent, step string) (string, contract.Input, error) {
	id := parent + "." + step
	in, err := FrozenInput(ctx, c, id)
	if err != nil {
		id = parent + "-" + step
		in, err = FrozenInput(ctx, c, id)
	}
	return id, in, err
}

// planElements decides, for each loop step the plan runs only because it
// did not complete before, which of its elements the new run reuses: an
// element whose item (as JSON) is that of one that completed in the
// earlier run (or in the runs that run reused it from) is reused with its
// result; an element that ran before elements carried their item is
// matched by its rendered tool, as is every element of a loop whose tool
// reads loop.index or loop.length (engine.ReadsLoopPosition). It
// fills the plan's element counts and returns what the new run's input
// carries (Input.ReuseElements), bounded whatever the loop's length.
func planElements(ctx context.Context, c Client, stored *filesLeft, earlierID string, before contract.Input, now engine.RetrySide, plan *engine.ReusePlan) (map[string]*contract.ElementReuse, error) {
	out := map[string]*contract.ElementReuse{}
	for i, d := range plan.Decisions {
		s := now.Playbook.Step(d.Step)
		if !plan.RunsForItself(now.Playbook, d.Step) || s.Loop == nil || s.Tool.Kind == "playbook" {
			continue
		}
		handsOn := s.Files != nil && len(s.Files.Outputs) > 0
		items, specs, err := plan.LoopElements(now, d.Step)
		if err != nil {
			continue // the run fails the step as it renders it
		}
		// A tool that reads where its element stands (loop.index,
		// loop.length) renders otherwise for an item that moved: its
		// elements are matched by the tool they render.
		placed := engine.ReadsLoopPosition(now.Playbook, s)
		done, err := completedElements(ctx, c, earlierID, before, d.Step, placed)
		if err != nil {
			return nil, err
		}
		stored.present(ctx, d.Step, done)
		reused := make([]bool, len(specs))
		r := &contract.ElementReuse{Total: len(specs), Results: map[int]any{}, Earlier: "the histories of " + earlierID + " and its loop driver"}
		size := 0
		for j, sp := range specs {
			// Each element that completed stands for one element of the
			// new list: a tool that renders alike for several (it reads
			// no item, or the list repeats one) reuses as many as
			// completed, and the others run.
			key := itemKey(items[j])
			if placed {
				key = placedKey(sp)
			}
			if len(done[key]) == 0 {
				key = toolKey(sp)
			}
			results := done[key]
			if len(results) == 0 {
				continue
			}
			result := results[0].result
			if len(results[0].files) > 0 {
				if r.Files == nil {
					r.Files = map[int]map[string]contract.FileRef{}
				}
				r.Files[j] = results[0].files
			}
			done[key] = results[1:]
			reused[j] = true
			n, _ := contract.EncodedSize(result)
			if size += n + 1; size > contract.LoopResultBudget {
				r.Truncated = true
			}
			if !r.Truncated {
				r.Results[j] = result
			}
		}
		if r.Truncated {
			r.Results, r.Files = nil, nil
		}
		r.Spans = contract.SpansOf(reused)
		// A loop that runs in the workflow itself returns every result:
		// reused without them, it runs whole.
		// Nor does one whose elements hand on files, reused without them.
		if r.Count() == 0 || (r.Truncated && (len(specs) <= contract.LoopBatchSize || handsOn)) {
			continue
		}
		out[d.Step] = r
		plan.Decisions[i].Elements = &engine.ElementCounts{Total: r.Total, Run: r.Total - r.Count(), Reused: r.Count()}
	}
	return out, nil
}

// completedElements are the elements of loop step step that completed in
// run id (in its own history, or in its loop driver's runs), by their item
// or rendered tool (elementKey), with the result of each that completed
// so; and, when run id itself reused elements of that step, those of the
// run it retried. With placed, those that recorded their item are also
// under the tool they rendered (placedKey).
func completedElements(ctx context.Context, c Client, id string, in contract.Input, step string, placed bool) (map[string][]doneElement, error) {
	dc, err := PayloadConverter()
	if err != nil {
		return nil, err
	}
	done := map[string][]doneElement{}
	for seen := 0; id != "" && seen < 100; seen++ {
		drivers, err := scanElements(ctx, c, dc, id, "", step, placed, done)
		if err != nil {
			return nil, err
		}
		for len(drivers) > 0 {
			// A driver's run, then the run it continued as new to.
			dr := drivers[0]
			next, err := scanElements(ctx, c, dc, dr.workflowID, dr.runID, step, placed, done)
			if err != nil {
				return nil, err
			}
			drivers = append(drivers[1:], next...)
		}
		if (in.ReuseElements[step] == nil && in.Reuse[step] == nil) || in.Origin == nil {
			break
		}
		id = in.Origin.RetryOf
		if in, err = FrozenInput(ctx, c, id); err != nil {
			return done, nil // what is known is enough: the rest runs
		}
	}
	return done, nil
}

// scanElements reads the history of one run, adding to done the loop
// elements of step that completed there; it returns the loop drivers the
// run started for the step, and the run it continued as new to.
func scanElements(ctx context.Context, c Client, dc converter.DataConverter, id, runID, step string, placed bool, done map[string][]doneElement) (more []workflowExecution, err error) {
	prefix := step + "["
	// keys are what an element scheduled is matched by (elementKey,
	// placedKey), until it ends.
	type keys struct{ item, placed string }
	scheduled := map[int64]keys{}
	it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, err
		}
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := e.GetActivityTaskScheduledEventAttributes()
			if !strings.HasPrefix(a.GetActivityId(), prefix) || a.GetActivityType().GetName() != contract.RunStepName || len(a.GetInput().GetPayloads()) != 1 {
				continue
			}
			var in contract.StepInput
			if dc.FromPayload(a.GetInput().GetPayloads()[0], &in) == nil {
				k := keys{item: elementKey(in)}
				if placed && in.ItemSHA256 != "" {
					k.placed = placedKey(in.Spec)
				}
				scheduled[e.GetEventId()] = k
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			a := e.GetActivityTaskCompletedEventAttributes()
			k, ok := scheduled[a.GetScheduledEventId()]
			delete(scheduled, a.GetScheduledEventId())
			if !ok || len(a.GetResult().GetPayloads()) != 1 {
				continue
			}
			var out contract.StepOutput
			if dc.FromPayload(a.GetResult().GetPayloads()[0], &out) == nil {
				done[k.item] = append(done[k.item], doneElement{out.Result, out.Files})
				if k.placed != "" {
					// Apart from its item's key: one element is reused once.
					done[k.placed] = append(done[k.placed], doneElement{out.Result, out.Files})
				}
			}
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			// A local element's local activity: its marker holds its
			// result, which gives its item's digest back; its summary is
			// its name, as an activity's ID is.
			a := e.GetMarkerRecordedEventAttributes()
			result := a.GetDetails()[localActivityResult].GetPayloads()
			if a.GetMarkerName() != localActivityMarker || a.GetFailure() != nil || len(result) != 1 {
				continue
			}
			var summary string
			if dc.FromPayload(e.GetUserMetadata().GetSummary(), &summary) != nil || !strings.HasPrefix(summary, prefix) {
				continue
			}
			var out contract.StepOutput
			if dc.FromPayload(result[0], &out) == nil && out.ItemSHA256 != "" {
				key := "item " + out.ItemSHA256
				done[key] = append(done[key], doneElement{out.Result, out.Files})
			}
		case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
			a := e.GetChildWorkflowExecutionStartedEventAttributes()
			if a.GetWorkflowType().GetName() == contract.LoopWorkflowName && isDriverOf(a.GetWorkflowExecution().GetWorkflowId(), id, step) {
				more = append(more, workflowExecution{a.GetWorkflowExecution().GetWorkflowId(), a.GetWorkflowExecution().GetRunId()})
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
			if runID != "" {
				more = append(more, workflowExecution{id, e.GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId()})
			}
		}
	}
	return more, nil
}

// localActivityMarker and localActivityResult are the name of the marker
// the Temporal SDK records for a local activity that ended, and the key of
// its details that holds the activity's result.
const localActivityMarker, localActivityResult = "LocalActivity", "result"

// doneElement is what an element that completed gave: its result and the
// files it handed on, at the keys of the run it ran in.
type doneElement struct {
	result any
	files  map[string]contract.FileRef
}

// workflowExecution is one run of a workflow.
type workflowExecution struct{ workflowID, runID string }

// isDriverOf tells whether id is the loop driver run parent started for
// step (playbookwf's child IDs, either side of child-id-dot).
func isDriverOf(id, parent, step string) bool {
	return id == parent+"."+step+".loop" || id == parent+"-"+step+"-loop"
}

// elementKey is what a retry matches a completed element by: its item's
// digest, which its activity input holds since elements carried it;
// else, in a run from before, the tool it rendered.
func elementKey(in contract.StepInput) string {
	if in.ItemSHA256 != "" {
		return "item " + in.ItemSHA256
	}
	return toolKey(in.Spec)
}

func itemKey(item any) string            { return "item " + contract.ItemDigest(item) }
func toolKey(spec map[string]any) string { return "tool " + string(contract.CanonicalJSON(spec)) }

// placedKey is what an element whose tool reads where it stands is
// matched by: the tool it rendered, among the elements that recorded
// their item (those from before are under toolKey).
func placedKey(spec map[string]any) string {
	return "placed " + string(contract.CanonicalJSON(spec))
}
