package contract

import (
	"encoding/json"
	"fmt"

	"playbook/interpreter/spec"
)

// EventReceived is a wait_event step's result: the event it waited for,
// its data (null when the step's timeout completed it), who sent it and
// when the run received it.
type EventReceived struct {
	Event    string `json:"event"`
	Data     any    `json:"data"`
	By       string `json:"by"`
	At       string `json:"at"`
	TimedOut bool   `json:"timed_out"`
}

// CheckEvent refuses an event no run would take, before it is sent and in
// the run's Update validator, so that nothing refused reaches a history:
// a name that is not one a wait_event step can wait for, data that is not
// JSON or over MaxDecisionBytes as JSON, a by that is not a name.
func CheckEvent(event string, data any, by string) error {
	if size, ok := Oversized(event); ok {
		return CheckSize("the event", size)
	}
	if !spec.IsName(event) {
		return fmt.Errorf("event %q: an event's name matches [a-z0-9][a-z0-9_-]*, as a wait_event step's event does", Cut(event, 80))
	}
	if err := CheckName("by", by); err != nil {
		return err
	}
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("the event's data is not JSON: %v", err)
	}
	return CheckSize("the event's data", len(b))
}
