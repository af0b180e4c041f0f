package runs

import (
	"context"
	"errors"

	"go.temporal.io/sdk/client"

	"playbook/interpreter/contract"
)

// SendEvent sends a run an event for its wait_event steps and returns the
// run's answer (which steps received it). The run refuses an event no
// step would take (a RefusedError in its words); a run that has ended is
// an EndedError saying how it ended. The caller checks the event first
// (contract.CheckEvent): the run's validator checks it again.
func SendEvent(ctx context.Context, c Client, run, event string, data any, by string) (string, error) {
	answer, err := Deliver(ctx, run, func(ctx context.Context, updateID string) (string, error) {
		return update(ctx, c, client.UpdateWorkflowOptions{WorkflowID: run, UpdateName: contract.UpdateEvent, Args: []any{event, data, by}, UpdateID: updateID})
	})
	var refused *RefusedError
	if err != nil && !errors.As(err, &refused) {
		if outcome := EndedOutcome(ctx, c, run); outcome != "" {
			return "", &EndedError{Run: run, Outcome: outcome, Nothing: "no step waits for event " + event}
		}
	}
	return answer, err
}
