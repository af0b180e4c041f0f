package worker

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	historypb "go.temporal.io/api/history/v1"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"playbook/internal/codec"
)

// Replay replays a recorded history against the current interpreter and
// returns the first divergence, if any. It replays as the original
// execution (its workflow and run IDs), because the interpreter derives
// child workflow IDs from its own. logger may be nil.
func Replay(h *historypb.History, logger sdklog.Logger) error {
	return ReplayWithCodec(h, logger, nil)
}

// ReplayWithCodec replays a history whose payloads c encrypted; with c nil,
// as Replay.
func ReplayWithCodec(h *historypb.History, logger sdklog.Logger, c *codec.AESGCM) error {
	if len(h.GetEvents()) == 0 {
		return errors.New("the history has no events")
	}
	started := h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
	if started == nil {
		return errors.New("the history does not start with WorkflowExecutionStarted")
	}
	var opts sdkworker.WorkflowReplayerOptions
	if c != nil {
		opts.DataConverter, opts.FailureConverter = c.DataConverter(), c.FailureConverter()
	}
	r, err := sdkworker.NewWorkflowReplayerWithOptions(opts)
	if err != nil {
		return err
	}
	RegisterWorkflow(r)
	return r.ReplayWorkflowHistoryWithOptions(logger, h, sdkworker.ReplayWorkflowHistoryOptions{
		OriginalExecution: workflow.Execution{ID: started.GetWorkflowId(), RunID: started.GetOriginalExecutionRunId()},
	})
}

var divergedAt = regexp.MustCompile(`history event position (\S+?)\.? However`)

// DivergingEvent names the recorded event a replay error points at, as
// "event N EventType (id)", or "" when the error names none. The SDK names
// the diverging command by its ID (activity, child workflow or timer);
// this finds the event that scheduled it.
func DivergingEvent(h *historypb.History, err error) string {
	m := divergedAt.FindStringSubmatch(err.Error())
	if m == nil {
		return ""
	}
	id := m[1]
	for _, e := range h.GetEvents() {
		var got string
		switch {
		case e.GetActivityTaskScheduledEventAttributes() != nil:
			got = e.GetActivityTaskScheduledEventAttributes().GetActivityId()
		case e.GetStartChildWorkflowExecutionInitiatedEventAttributes() != nil:
			got = e.GetStartChildWorkflowExecutionInitiatedEventAttributes().GetWorkflowId()
		case e.GetTimerStartedEventAttributes() != nil:
			got = e.GetTimerStartedEventAttributes().GetTimerId()
		}
		if got == id {
			return fmt.Sprintf("event %d %s (%s)", e.GetEventId(), strings.TrimPrefix(e.GetEventType().String(), "EVENT_TYPE_"), id)
		}
	}
	return ""
}
