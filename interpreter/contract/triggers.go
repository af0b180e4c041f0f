package contract

import "time"

// A trigger's registration is a workflow of its own, one per trigger,
// that `playbook schedule apply` starts or signals: its history is where
// the registration lives durably, and, for an after trigger, the cursor
// of the upstream runs it has answered.
const (
	// TriggerWorkflowName is the workflow type of a trigger's registration.
	TriggerWorkflowName = "PlaybookTrigger"
	// TriggerWatchActivity lists the upstream runs ended since a cursor
	// and starts a downstream run for each that matches.
	TriggerWatchActivity = "PlaybookTriggerWatch"
	// QueryTrigger answers a trigger's current registration.
	QueryTrigger = "trigger"
	// SignalTriggerApply replaces a trigger's registration (a re-apply).
	SignalTriggerApply = "apply"
	// MemoTriggerFile marks a trigger's workflow with the playbook file's
	// absolute path, as schedules apply made are marked.
	MemoTriggerFile = "playbook-apply-file"

	// TriggerWatchSpan is how long one TriggerWatchActivity runs before it
	// returns its cursor to the trigger's history (a re-apply takes
	// effect at the next round).
	TriggerWatchSpan = time.Minute

	// TriggerKindWebhook and TriggerKindAfter are trigger.kind.
	TriggerKindWebhook = "webhook"
	TriggerKindAfter   = "after"
)

// TriggerInput is a trigger workflow's input, again at each continue-as-new.
type TriggerInput struct {
	Registration TriggerRegistration `json:"registration"`
	// Cursor is where an after trigger's watch stands; nil for a webhook.
	Cursor *TriggerCursor `json:"cursor,omitempty"`
}

// TriggerRegistration is one trigger of one playbook, as applied: the run
// it starts, frozen as `run` freezes it, and what starts it.
type TriggerRegistration struct {
	// Playbook is the downstream playbook's name.
	Playbook string `json:"playbook"`
	// Run is the frozen input of the runs it starts (their workload is
	// merged in).
	Run       Input  `json:"run"`
	TaskQueue string `json:"task_queue"`
	// Webhook: POST /hooks/NAME, signed with the worker's secret Secret.
	Hook   string `json:"hook,omitempty"`
	Secret string `json:"secret,omitempty"`
	// After: a run of Upstream that ended in one of Statuses.
	Upstream string   `json:"upstream,omitempty"`
	Statuses []string `json:"statuses,omitempty"`
	// File is the playbook file's absolute path, for `apply --prune`.
	File string `json:"file,omitempty"`
}

// TriggerCursor is the last upstream run an after trigger answered, in
// the order of their close times: the watch lists the runs that ended
// since a little before it (visibility may show a run late), and a
// downstream run's ID, derived from its upstream run's, makes a second
// answer to one run a no-op.
type TriggerCursor struct {
	CloseTime  time.Time `json:"close_time"`
	WorkflowID string    `json:"workflow_id"`
}
