package playbookwf

import (
	"encoding/json"
	"fmt"

	"go.temporal.io/sdk/workflow"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
)

// EventsPage is the most events the CLI asks one `events` query for: a run
// of thousands of steps has tens of thousands, more than one answer may
// carry. It asks again after the last one it got.
const EventsPage = 1000

func registerQueries(ctx workflow.Context, run *engine.Run) error {
	// (after, limit): the events after seq after, at most limit of them; a
	// client from before pages sends no limit (0) and gets all.
	if err := workflow.SetQueryHandler(ctx, QueryEvents, func(after, limit int) ([]engine.Event, error) {
		ev := run.Events()
		if after < 0 || after > len(ev) {
			after = 0
		}
		if limit <= 0 {
			return ev[after:], nil
		}
		return ev[after:min(len(ev), after+limit)], nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryPending, func() ([]engine.PendingStep, error) { return run.Pending(), nil }); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryApprovals, func() ([]engine.WaitingApproval, error) { return run.Approvals(), nil }); err != nil {
		return err
	}
	return workflow.SetQueryHandler(ctx, QueryState, func() (*contract.Aggregate, error) { return run.Bounded(run.Snapshot()), nil })
}

// registerClassify accepts classifications of pending_failed steps; the
// validator rejects an unknown step, one that is not pending, or an unknown
// action before anything is written to history.
func registerClassify(ctx workflow.Context, run *engine.Run, classified workflow.Channel) error {
	return workflow.SetUpdateHandlerWithOptions(ctx, UpdateClassify,
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
		workflow.UpdateHandlerOptions{Validator: func(step, action, _, _, result string) error {
			if result != "" && action != engine.ClassifySkip {
				return fmt.Errorf("a result goes with skip, not %s", action)
			}
			if result != "" && !json.Valid([]byte(result)) {
				return fmt.Errorf("the result is not JSON: %s", result)
			}
			return run.CheckClassify(step, action)
		}})
}
