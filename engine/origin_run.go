package engine

import "playbook/contract"

// Started records where the run came from, when it is a retry: a
// run_retried event first in its events, and the aggregate's origin.
func (r *Run) Started(o *contract.Origin) {
	if o == nil {
		return
	}
	r.origin = o
	data := map[string]any{"retry_of": o.RetryOf}
	if o.From != "" {
		data["from"] = o.From
	}
	if o.By != "" {
		data["by"] = o.By
	}
	if o.Reason != "" {
		data["reason"] = o.Reason
	}
	r.emit(Event{Type: "run_retried", Message: o.String(), Data: data})
}
