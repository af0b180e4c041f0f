package contract

// Aggregate is a run's outcome as `end` decided it: the workflow's result.
type Aggregate struct {
	Playbook           string   `json:"playbook"`
	WorkflowID         string   `json:"workflow_id"`
	RunID              string   `json:"run_id"`
	Status             string   `json:"status"`
	EvaluatedByEndStep bool     `json:"evaluated_by_end_step"`
	TotalSteps         int      `json:"total_steps"`
	FailedStepsCount   int      `json:"failed_steps_count"`
	FailedSteps        []string `json:"failed_steps"`
	// WarningSteps lists, in file order, the steps with allow_failure that
	// failed: they do not count in FailedSteps, and a run that succeeded
	// with any is completed_with_warnings.
	WarningSteps      []string              `json:"warning_steps,omitempty"`
	WarningStepsCount int                   `json:"warning_steps_count,omitempty"`
	Steps             map[string]*StepState `json:"steps"`
	// StepsOmitted counts the completed, reused and skipped steps left out
	// of Steps because the aggregate would not fit its budget otherwise
	// (AggregateBudget): only a playbook of tens of thousands of steps.
	StepsOmitted int `json:"steps_omitted,omitempty"`
	// StepsCompacted says that the completed, reused and skipped steps'
	// entries keep only their status and attempts, for the same reason.
	StepsCompacted bool `json:"steps_compacted,omitempty"`
	// CancelReason says why a cancelled run was cancelled, when the client
	// that cancelled it said (playbook cancel --reason).
	CancelReason string `json:"cancel_reason,omitempty"`
	// Origin says which run this one retried, who asked and why.
	Origin *Origin `json:"origin,omitempty"`
	// LogicalTime is the time the run stands for (run.logical_time, RFC
	// 3339, UTC): its schedule's time, or when it was submitted.
	LogicalTime string `json:"logical_time,omitempty"`
	// Notifications record the webhooks told of the outcome.
	Notifications []Notification `json:"notifications,omitempty"`
}

// Notification is one webhook call made after `end` decided.
type Notification struct {
	Event     string `json:"event"`
	Webhook   string `json:"webhook"`
	Delivered bool   `json:"delivered"`
	Error     string `json:"error,omitempty"`
}
