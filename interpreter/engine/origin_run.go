package engine

import "playbook/interpreter/contract"

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
	if o.File != "" {
		data["file"] = o.File
	}
	if o.FileChanged {
		data["file_changed"] = true
	}
	if len(o.Overrides) > 0 {
		data["overrides"] = o.Overrides
	}
	r.emit(Event{Type: "run_retried", Message: o.String(), Data: data})
}
