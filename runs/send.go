package runs

import (
	"context"
	"errors"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"playbook/interpreter/contract"
)

// SendEvent sends a run an event for its wait_event steps and returns the
// run's answer (which steps received it). The run refuses an event no
// step would take (a RefusedError in its words); a run that has ended is
// an EndedError saying how it ended. The caller checks the event first
// (contract.CheckEvent): the run's validator checks it again.
func SendEvent(ctx context.Context, c Client, run, event string, data any, by string) (string, error) {
	return sendEvent(ctx, c, eventSend{Run: run, Event: event, Data: data, By: by})
}

// eventSend is one event sent to a run: to the Temporal run RunID of the
// workflow Run ("": its latest), as the Update UpdateID ("": a new one).
type eventSend struct {
	Run, RunID, UpdateID string
	Event, By            string
	Data                 any
}

func sendEvent(ctx context.Context, c Client, e eventSend) (string, error) {
	send := func(ctx context.Context, updateID string) (string, error) {
		return update(ctx, c, client.UpdateWorkflowOptions{WorkflowID: e.Run, RunID: e.RunID, UpdateName: contract.UpdateEvent, Args: []any{e.Event, e.Data, e.By}, UpdateID: updateID})
	}
	var answer string
	var err error
	if e.UpdateID == "" {
		answer, err = Deliver(ctx, e.Run, send)
	} else {
		answer, err = deliverAs(ctx, e.Run, e.UpdateID, deliverFor, send)
	}
	return answer, endedOr(ctx, c, e.Run, "no step waits for event "+e.Event, err)
}

// Starter is what starting a run with an event asks of Temporal, beside
// Client.
type Starter interface {
	NewWithStartWorkflowOperation(options client.StartWorkflowOptions, workflow any, args ...any) client.WithStartWorkflowOperation
	UpdateWithStartWorkflow(ctx context.Context, options client.UpdateWithStartWorkflowOptions) (client.WorkflowUpdateHandle, error)
}

// SendEventStarting sends an event to the open run with opts.ID, starting
// it (the workflow with in) when none is open: one request, so that the
// run started receives the event however soon it would wait for it. It
// returns the run's answer and the Temporal run ID that took the event.
func SendEventStarting(ctx context.Context, c Starter, opts client.StartWorkflowOptions, in any, event string, data any, by string) (answer, runID string, err error) {
	opts.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
	opts.WorkflowExecutionErrorWhenAlreadyStarted = false
	// An operation is used once: each try makes its own.
	var start client.WithStartWorkflowOperation
	answer, err = Deliver(ctx, opts.ID, func(ctx context.Context, updateID string) (string, error) {
		start = c.NewWithStartWorkflowOperation(opts, contract.WorkflowName, in)
		h, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{StartWorkflowOperation: start,
			UpdateOptions: client.UpdateWorkflowOptions{UpdateName: contract.UpdateEvent, Args: []any{event, data, by}, UpdateID: updateID, WaitForStage: client.WorkflowUpdateStageCompleted}})
		var answer string
		if err == nil {
			err = h.Get(ctx, &answer)
		}
		var rejected *temporal.ApplicationError
		if errors.As(err, &rejected) {
			return answer, &RefusedError{Run: opts.ID, Err: err}
		}
		return answer, err
	})
	if err != nil {
		return "", "", err
	}
	run, err := start.Get(ctx)
	if err != nil {
		return "", "", err
	}
	return answer, run.GetRunID(), nil
}
