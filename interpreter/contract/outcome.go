package contract

// Recovery outcomes of a failed attempt.
const (
	RecoveryRetried            = "retried"
	RecoveryNoHandler          = "no_handler"
	RecoveryNoMatchingRule     = "no_matching_rule"
	RecoveryMaxRetriesExceeded = "max_retries_exceeded"
	RecoveryError              = "error"
)

// AttemptRecord is one failed attempt of a step.
type AttemptRecord struct {
	Attempt  int       `json:"attempt"`
	Error    StepError `json:"error"`
	Recovery string    `json:"recovery,omitempty"`
	// RecoveryExitCode is the exit code of the rule's recovery script, when one ran.
	RecoveryExitCode *int `json:"recovery_exit_code,omitempty"`
	// Lost is true for an attempt lost with its worker (it crashed, was
	// killed, lost the server, or was stopped): infrastructure, not the
	// step's own failure.
	Lost bool `json:"lost,omitempty"`
	// LogsAt is the URL of the worker that serves the attempt's logs.
	LogsAt string `json:"logs_at,omitempty"`
}

// Outcome is how a step's activity ended, as the workflow hands it to Settle.
type Outcome struct {
	Result        any
	Err           *StepError // nil: the step completed
	Attempts      int
	Recovery      string
	AttemptErrors []AttemptRecord
	// Files are the files a completed step uploaded, by their path.
	Files map[string]FileRef
}
