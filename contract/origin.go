package contract

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
}

// String is the origin in one line: "retry of X from step S by mcp: why".
func (o *Origin) String() string {
	s := "retry of " + o.RetryOf
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
