package playbookwf

import (
	"encoding/json"
	"fmt"

	"go.temporal.io/sdk/workflow"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
)

func registerQueries(ctx workflow.Context, run *engine.Run) error {
	// (after, limit, maxBytes): the events after seq after, at most limit
	// of them and, past the first, at most maxBytes of them as JSON. A
	// client from before pages sends no limit (0) and gets all; one from
	// before byte pages sends no maxBytes (0) and gets limit.
	if err := workflow.SetQueryHandler(ctx, contract.QueryEvents, func(after, limit, maxBytes int) ([]engine.Event, error) {
		ev := run.Events()
		if after < 0 || after > len(ev) {
			after = 0
		}
		page := ev[after:]
		if limit > 0 {
			page = page[:min(len(page), limit)]
		}
		if maxBytes > 0 {
			page = page[:eventsWithin(page, maxBytes)]
		}
		return page, nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, contract.QueryPending, func() ([]engine.PendingStep, error) { return run.Pending(), nil }); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, contract.QueryApprovals, func() ([]engine.WaitingApproval, error) { return run.Approvals(), nil }); err != nil {
		return err
	}
	return workflow.SetQueryHandler(ctx, contract.QueryState, func() (*contract.Aggregate, error) { return stateOf(ctx, run), nil })
}

// stateOf is the state query's answer: the run's aggregate so far, within
// its budget, with the run's workflow and run IDs, as its result has them
// (`temporal workflow query --type state` reads them), and, while it
// winds down, why.
func stateOf(ctx workflow.Context, run *engine.Run) *contract.Aggregate {
	agg := run.Snapshot()
	if agg.WorkflowID == "" {
		own := *agg
		e := workflow.GetInfo(ctx).WorkflowExecution
		own.WorkflowID, own.RunID = e.ID, e.RunID
		own.WindingDown = run.WindingDown()
		agg = &own
	}
	return run.Bounded(agg)
}

// eventsWithin is how many of the first events fit in maxBytes as JSON;
// one at least.
func eventsWithin(evs []engine.Event, maxBytes int) int {
	size := 0
	for i, e := range evs {
		b, _ := json.Marshal(e)
		if size += len(b); size > maxBytes && i > 0 {
			return i
		}
	}
	return len(evs)
}

// registerClassify accepts classifications of pending_failed steps; the
// validator rejects an unknown step, one that is not pending, an unknown
// action, or one over its size or with a control character in by or
// reason, before anything is written to history.
func registerClassify(ctx workflow.Context, run *engine.Run, classified workflow.Channel) error {
	return workflow.SetUpdateHandlerWithOptions(ctx, contract.UpdateClassify,
		func(ctx workflow.Context, step, action, reason, by, result string) (string, error) {
			if by == "" {
				by = "classify"
			}
			var err error
			if result != "" {
				// A history from before results came has no fifth argument.
				var v any
				_ = json.Unmarshal([]byte(result), &v)
				err = run.SkipWithResult(step, by, reason, v)
			} else {
				err = run.Classify(step, action, by, reason)
			}
			if err != nil {
				return "", err
			}
			classified.SendAsync(struct{}{})
			return fmt.Sprintf("step %s classified %s: now %s", step, action, run.State(step).Status), nil
		},
		workflow.UpdateHandlerOptions{Validator: func(step, action, reason, by, result string) error {
			if size, oversized := contract.Oversized(step); oversized {
				return contract.CheckSize("the classification", size)
			}
			if err := contract.CheckName("by", by); err != nil {
				return err
			}
			if err := contract.CheckLine("the reason", reason); err != nil {
				return err
			}
			if err := contract.CheckSize("the classification", len(step)+len(action)+len(reason)+len(by)+len(result)); err != nil {
				return err
			}
			if result != "" && action != engine.ClassifySkip {
				return fmt.Errorf("a result goes with skip, not %s", action)
			}
			if result != "" && !json.Valid([]byte(result)) {
				return fmt.Errorf("the result is not JSON: %s", result)
			}
			return run.CheckClassify(step, action)
		}})
}
