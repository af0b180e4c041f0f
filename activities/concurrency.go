package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"

	"playbook/interpreter/contract"
)

// The activities of concurrency limits (docs/INTERNALS.md, "Concurrency
// limits"): a run asks its key's coordinator for a slot, and the
// coordinator watches each run that holds one until it ends.

// AcquireSlot asks r's key's coordinator for a slot with an
// update-with-start: the coordinator starts, on the asking run's task
// queue, if none runs. Asked again (a retry), the coordinator answers the
// place the run has.
func (a *Activities) AcquireSlot(ctx context.Context, r contract.SlotRequest) (contract.SlotAnswer, error) {
	var ans contract.SlotAnswer
	if a.Client == nil {
		return ans, errors.New("this worker has no client to reach the concurrency coordinator with")
	}
	id := contract.CoordinatorID(r.Playbook, r.Key)
	start := a.Client.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                r.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		StaticSummary:            fmt.Sprintf("concurrency of playbook %s, key %s", r.Playbook, contract.Cut(r.Key, 100)),
	}, contract.CoordinatorWorkflowName, contract.Slots{Playbook: r.Playbook, Key: r.Key, Limit: r.Limit})
	h, err := a.Client.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{StartWorkflowOperation: start,
		UpdateOptions: client.UpdateWorkflowOptions{UpdateName: contract.UpdateSlot, Args: []any{r},
			UpdateID: r.WorkflowID + "/" + r.RunID, WaitForStage: client.WorkflowUpdateStageCompleted}})
	if err == nil {
		err = h.Get(ctx, &ans)
	}
	return ans, err
}

// WatchHolder returns when the run r has ended, in any way: completed,
// failed, cancelled, terminated, timed out, or deleted. It waits on the
// run's result (a long poll) and heartbeats meanwhile, so that a watch
// lost with its worker is started again.
func (a *Activities) WatchHolder(ctx context.Context, r contract.SlotRequest) error {
	if a.Client == nil {
		return errors.New("this worker has no client to watch runs with")
	}
	beat, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		for {
			activity.RecordHeartbeat(ctx)
			select {
			case <-beat.Done():
				return
			case <-time.After(2 * time.Second):
			}
		}
	}()
	for {
		// Get returns the run's error when it failed, was cancelled or
		// terminated: any answer is checked by a describe.
		_ = a.Client.GetWorkflow(ctx, r.WorkflowID, r.RunID).Get(ctx, nil)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		d, err := a.Client.DescribeWorkflowExecution(ctx, r.WorkflowID, r.RunID)
		var notFound *serviceerror.NotFound
		switch {
		case errors.As(err, &notFound):
			return nil
		case err == nil && d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
