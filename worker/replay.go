package worker

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"playbook/internal/claims"
	"playbook/internal/codec"
	"playbook/internal/store"
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
	return ReplayFrom(h, logger, c, nil)
}

// ReplayFrom is ReplayWithCodec for a run that kept its large values in
// st (internal/claims), which the replay reads them from; st nil: none.
func ReplayFrom(h *historypb.History, logger sdklog.Logger, c *codec.AESGCM, st store.Store) error {
	if len(h.GetEvents()) == 0 {
		return errors.New("the history has no events")
	}
	started := h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
	if started == nil {
		return errors.New("the history does not start with WorkflowExecutionStarted")
	}
	// The SDK fails a workflow task that does not yield for a second, to
	// catch a deadlock in a live worker. Replaying a long history on a busy
	// machine can pass that second with no deadlock at all (a loop of
	// 100,000 elements replayed beside other work did), so a replay runs
	// without it and is bounded as a whole instead (ReplayBound).
	opts := sdkworker.WorkflowReplayerOptions{DisableDeadlockDetection: true}
	if c != nil {
		opts.DataConverter, opts.FailureConverter = c.DataConverter(), c.FailureConverter()
	}
	if st != nil {
		var co client.Options
		claims.Use(&co, claims.Open(st), false)
		opts.ExternalStorage = co.ExternalStorage
	}
	r, err := sdkworker.NewWorkflowReplayerWithOptions(opts)
	if err != nil {
		return err
	}
	RegisterWorkflow(r)
	done := make(chan error, 1)
	go func() {
		done <- r.ReplayWorkflowHistoryWithOptions(logger, h, sdkworker.ReplayWorkflowHistoryOptions{
			OriginalExecution: workflow.Execution{ID: started.GetWorkflowId(), RunID: started.GetOriginalExecutionRunId()},
		})
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(ReplayBound):
		return fmt.Errorf("the replay did not end within %s: the workflow code may not yield (a deadlock or an endless loop)", ReplayBound)
	}
}

// MaxHistoryFile bounds a history file a replay reads: Temporal refuses a
// history over 50 MB, and its JSON is about twice that.
const MaxHistoryFile = 128 << 20

// HistoryFromJSON reads a history as `playbook history` writes it; its
// error says what is wrong with the text, for a line that names the file.
func HistoryFromJSON(b []byte) (*historypb.History, error) {
	if len(b) == 0 {
		return nil, errors.New("not a history: the file is empty (save a history with `playbook history RUN -o FILE.json`)")
	}
	h, err := client.HistoryFromJSON(bytes.NewReader(b), client.HistoryJSONOptions{})
	if err != nil {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		msg, _, _ = strings.Cut(msg, " (in /")
		return nil, fmt.Errorf("not a history: %s", msg)
	}
	if len(h.GetEvents()) == 0 {
		return nil, errors.New("not a history: it holds no events (save one with `playbook history RUN -o FILE.json`)")
	}
	return h, nil
}

// ReplayBound is how long one history's replay may take in all.
var ReplayBound = 10 * time.Minute

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
