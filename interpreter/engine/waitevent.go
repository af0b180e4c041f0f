package engine

import (
	"fmt"
	"strings"
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// A wait_event step waits for an event sent to the run. The run takes an
// event for a step that has not started yet too (it is kept until the
// step starts), so that a sender need not know how far the run is; it
// refuses one that no step would take, so that events sent to a run
// never grow its history past one per wait_event step.

// AwaitEvent records that a wait_event step, started, now waits for its
// event: the run's status is then `waiting`, and the step's note says for
// what and how to send it.
func (r *Run) AwaitEvent(name string) {
	event := r.pb.Step(name).Tool.WaitEvent().Event
	st := r.states[name]
	st.Waiting = &contract.Waiting{For: "event " + event, Since: r.now(), Message: SendCommand(r.executionID, event)}
	r.emit(Event{Type: "step_waiting", Step: name, Message: "waiting for event " + event})
}

// SendCommand is the command line that sends a run the event a
// wait_event step waits for.
func SendCommand(run, event string) string {
	return "playbook send " + run + " " + event + " --data '{...}'"
}

// EventTakers are the wait_event steps of the run that would take an
// event named event now: they wait for it and have not ended (started
// or not), and none is in taken (the steps that have received one). The
// error says why no step would, in words for the sender.
func (r *Run) EventTakers(event string, taken map[string]bool) ([]string, error) {
	var takers, waiting, had, ended []string
	for i, s := range r.pb.Steps {
		if s.Tool == nil || s.Tool.Kind != spec.WaitEventKind {
			continue
		}
		name := s.Tool.WaitEvent().Event
		waiting = append(waiting, name)
		if name != event {
			continue
		}
		st := r.ordered[i]
		switch {
		case taken[s.Name]:
			had = append(had, s.Name)
		case st.Status != contract.StatusPending && st.Status != contract.StatusRunning:
			ended = append(ended, fmt.Sprintf("%s is %s", s.Name, st.Status))
		default:
			takers = append(takers, s.Name)
		}
	}
	switch {
	case len(takers) > 0:
		return takers, nil
	case len(waiting) == 0:
		return nil, fmt.Errorf("playbook %s has no wait_event step: it takes no event", r.pb.Name)
	case len(had) > 0:
		return nil, fmt.Errorf("event %s was already received by step %s: a wait_event step takes one event", event, strings.Join(had, ", "))
	case len(ended) > 0:
		return nil, fmt.Errorf("no step waits for event %s any more (%s)", event, strings.Join(ended, ", "))
	}
	return nil, fmt.Errorf("no step of playbook %s waits for event %s (its wait_event steps wait for: %s)", r.pb.Name, event, strings.Join(uniq(waiting), ", "))
}

func uniq(names []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// EventArrived completes a wait_event step with the event it received.
func (r *Run) EventArrived(name string, ev contract.EventReceived) contract.Outcome {
	r.states[name].Waiting = nil
	r.emit(Event{Type: "step_event_received", Step: name, Message: "received event " + ev.Event + " from " + ev.By})
	return contract.Outcome{Attempts: 1, Result: eventResult(ev)}
}

// EventTimedOut applies a wait_event step's on_timeout: complete completes
// it with data null and timed_out true; fail fails it with error type
// timeout.
func (r *Run) EventTimedOut(name string) contract.Outcome {
	w := r.pb.Step(name).Tool.WaitEvent()
	r.states[name].Waiting = nil
	reason := fmt.Sprintf("no event %s within %s", w.Event, w.Timeout)
	r.emit(Event{Type: "step_timed_out", Step: name, Message: reason})
	if w.OnTimeout == spec.OnTimeoutComplete {
		return contract.Outcome{Attempts: 1, Result: eventResult(contract.EventReceived{Event: w.Event, By: "timeout", At: r.now().UTC().Format(time.RFC3339), TimedOut: true})}
	}
	return contract.Outcome{Attempts: 1, Err: &contract.StepError{Type: contract.ErrTimeout, Message: reason + " (on_timeout: fail)"}}
}

// eventResult is a wait_event step's result as expressions read it.
func eventResult(ev contract.EventReceived) map[string]any {
	return map[string]any{"event": ev.Event, "data": ev.Data, "by": ev.By, "at": ev.At, "timed_out": ev.TimedOut}
}
