package contract

import (
	"fmt"
	"time"
)

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
	// Timeout says that the run's deadline passed before `end` ran.
	Timeout *RunTimeout `json:"timeout,omitempty"`
	// Origin says which run this one retried, who asked and why.
	Origin *Origin `json:"origin,omitempty"`
	// LogicalTime is the time the run stands for (run.logical_time, RFC
	// 3339, UTC): its schedule's time, or when it was submitted.
	LogicalTime string `json:"logical_time,omitempty"`
	// Notifications record the webhooks told of the outcome.
	Notifications []Notification `json:"notifications,omitempty"`
	// Queued says that the run waits for a slot of its concurrency key;
	// nil once it holds one, and in a playbook without `concurrency`.
	Queued *QueuedRun `json:"queued,omitempty"`
	// Refused says why the run's concurrency limit refused it
	// (on_limit: fail): it ran no step.
	Refused string `json:"refused,omitempty"`
	// WindingDown, in an open run's state (the state query) only, says
	// why it is winding down: WindingDownCancel, WindingDownDrain or
	// WindingDownDeadline; "" while it is not. A run's result never has
	// it: its status says how it ended.
	WindingDown string `json:"winding_down,omitempty"`
}

// Why an open run winds down (Aggregate.WindingDown).
const (
	WindingDownCancel   = "cancel"
	WindingDownDrain    = "drain"
	WindingDownDeadline = "deadline"
)

// Notification is one webhook call made after `end` decided.
type Notification struct {
	Event     string `json:"event"`
	Webhook   string `json:"webhook"`
	Delivered bool   `json:"delivered"`
	Error     string `json:"error,omitempty"`
}

// Deadline is when a run winds down: its playbook's timeout after its
// start, or the deadline its parent carried down to it, whichever is
// earlier. It rides on a sub-playbook's input (playbookwf.Input).
type Deadline struct {
	At time.Time `json:"at"`
	// Timeout is the playbook timeout that set it ("3s").
	Timeout string `json:"timeout"`
	// SetBy is the workflow ID of the run whose timeout set it.
	SetBy string `json:"set_by"`
}

// RunTimeout, in a run's aggregate, says that its deadline passed.
type RunTimeout struct {
	// After is the timeout that set the deadline ("3s").
	After string `json:"after"`
	// OnTimeout is the run's own on_timeout: cancel or fail.
	OnTimeout string `json:"on_timeout"`
	// Deadline is when it passed (RFC 3339, UTC).
	Deadline string `json:"deadline"`
	// SetBy is the parent run whose deadline a sub-playbook inherited;
	// empty when the run's own timeout set it.
	SetBy string `json:"set_by,omitempty"`
}

// String says it in one line: "the run's deadline of 3s passed", and who
// set it when a parent did.
func (t *RunTimeout) String() string {
	if t.SetBy != "" {
		return fmt.Sprintf("the run's deadline of %s (inherited from %s) passed", t.After, t.SetBy)
	}
	return fmt.Sprintf("the run's deadline of %s passed", t.After)
}
