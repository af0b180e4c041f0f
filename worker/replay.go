package worker

import (
	"errors"

	historypb "go.temporal.io/api/history/v1"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Replay replays a recorded history against the current interpreter and
// returns the first divergence, if any. It replays as the original
// execution (its workflow and run IDs), because the interpreter derives
// child workflow IDs from its own. logger may be nil.
func Replay(h *historypb.History, logger sdklog.Logger) error {
	if len(h.GetEvents()) == 0 {
		return errors.New("the history has no events")
	}
	started := h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
	if started == nil {
		return errors.New("the history does not start with WorkflowExecutionStarted")
	}
	r := sdkworker.NewWorkflowReplayer()
	RegisterWorkflow(r)
	return r.ReplayWorkflowHistoryWithOptions(logger, h, sdkworker.ReplayWorkflowHistoryOptions{
		OriginalExecution: workflow.Execution{ID: started.GetWorkflowId(), RunID: started.GetOriginalExecutionRunId()},
	})
}
