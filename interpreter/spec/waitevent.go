package spec

import (
	"fmt"
	"time"

	"github.com/expr-lang/expr/types"
)

// WaitEventKind is the kind of a step that waits for a named event.
const WaitEventKind = "wait_event"

// What a wait_event step does when its timeout passes with no event.
const (
	// OnTimeoutComplete completes the step with no data (timed_out true),
	// for its next to route on.
	OnTimeoutComplete = "complete"
)

// WaitEventTool waits, in the workflow, for an event of a name sent to the
// run (`playbook send`, the run's event Update, the MCP server), and
// completes with its data. No activity, no process, no worker.
type WaitEventTool struct {
	Event     string   `json:"event" required:"true" doc:"The name of the event the step waits for ([a-z0-9][a-z0-9_-]*, no template): playbook send RUN EVENT delivers it."`
	Timeout   Duration `json:"timeout" doc:"How long the step waits for the event (default: for ever)."`
	OnTimeout string   `json:"on_timeout" doc:"What the timeout does: fail (default, error type timeout) or complete (with data null and timed_out true)."`
}

func (*WaitEventTool) Kind() string { return WaitEventKind }
func (*WaitEventTool) resultShape() types.Map {
	return types.Map{"event": types.String, "data": types.Any, "by": types.String, "at": types.String, "timed_out": types.Bool}
}
func (*WaitEventTool) check(fields map[string]any) (string, string) {
	event, _ := fields["event"].(string)
	switch on, _ := fields["on_timeout"].(string); {
	case fields["event"] == nil:
		return "", "wait_event tool needs an event: the name of the event it waits for"
	case !namePattern.MatchString(event):
		return "event", fmt.Sprintf("wait_event tool: event %q must match [a-z0-9][a-z0-9_-]* (no template: a sender names it)", event)
	case fields["on_timeout"] != nil && on != OnTimeoutFail && on != OnTimeoutComplete:
		return "on_timeout", fmt.Sprintf("wait_event tool: on_timeout must be fail or complete, not %q", on)
	case fields["on_timeout"] != nil && fields["timeout"] == nil:
		return "on_timeout", "wait_event tool: on_timeout needs a timeout in the tool (tool: {kind: wait_event, timeout: 1h, on_timeout: ...}): how long the step waits"
	case holdsTemplate(fields["timeout"]) || holdsTemplate(fields["on_timeout"]):
		return "timeout", "wait_event tool: timeout and on_timeout hold no template"
	}
	return "", ""
}

// strictCheck refuses, at submission only, a timeout of nothing.
func (*WaitEventTool) strictCheck(fields map[string]any) (string, string) {
	if fields["timeout"] != nil && isZeroDuration(fields["timeout"]) {
		return "timeout", "wait_event tool: timeout must be more than 0 (leave it out to wait for ever)"
	}
	return "", ""
}

// WaitEvent is a wait_event tool's fields.
type WaitEvent struct {
	Event     string
	Timeout   time.Duration // 0: for ever
	OnTimeout string
}

// WaitEvent reads a wait_event tool's fields.
func (t *Tool) WaitEvent() WaitEvent {
	w := WaitEvent{OnTimeout: OnTimeoutFail}
	w.Event, _ = t.Spec["event"].(string)
	w.Timeout, _ = toolDuration(t.Spec["timeout"])
	if on, ok := t.Spec["on_timeout"].(string); ok {
		w.OnTimeout = on
	}
	return w
}

// IsName tells whether s is a name as playbooks write them: a step's, a
// playbook's, an event's ([a-z0-9][a-z0-9_-]*).
func IsName(s string) bool { return namePattern.MatchString(s) }
