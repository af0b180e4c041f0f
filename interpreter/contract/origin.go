package contract

import (
	"encoding/json"
	"strings"
)

// Origin says where a run that is not a plain submission came from: a
// retry of an earlier run, who asked for it and why. It rides on the run's
// input, so the first event of its history holds it too.
type Origin struct {
	// RetryOf is the workflow ID of the run retried.
	RetryOf string `json:"retry_of"`
	// From is the step the retry ran again from, with everything downstream.
	From string `json:"from,omitempty"`
	// By says who asked: "cli", "mcp".
	By string `json:"by,omitempty"`
	// Reason is why, as they said it.
	Reason string `json:"reason,omitempty"`
	// File is the playbook file the retry was given (retry --file), whose
	// text replaced the earlier run's; "" when it ran the frozen one.
	File string `json:"file,omitempty"`
	// FileChanged says that the playbook or a sub-playbook the retry ran
	// differs from the earlier run's.
	FileChanged bool `json:"file_changed,omitempty"`
	// Overrides are the workload values the retry set on top of the
	// earlier run's (--input, then --set).
	Overrides map[string]any `json:"overrides,omitempty"`
}

// String is the origin in one line: "retry of X with a changed file
// (workload {"rate":2}) from step S by mcp: why".
func (o *Origin) String() string {
	s := "retry of " + o.RetryOf
	switch {
	case o.FileChanged:
		s += " with a changed playbook"
	case o.File != "":
		s += " with an unchanged playbook"
	}
	if len(o.Overrides) > 0 {
		b, _ := json.Marshal(o.Overrides)
		s += " and workload " + strings.TrimSpace(string(b))
	}
	if o.From != "" {
		s += " from step " + o.From
	}
	if o.By != "" {
		s += " by " + o.By
	}
	if o.Reason != "" {
		s += ": " + o.Reason
	}
	return s
}
