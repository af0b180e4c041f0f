package contract

import "time"

// The wire: the names a client and the workflow share (workflow types,
// queries, Updates, signals, search attributes) and the workflows' inputs.
// A history records them, so they never change; the workflow
// (interpreter/playbookwf) answers to them and the client side of a run
// (runs/) calls them, neither importing the other.
const (
	// WorkflowName is the workflow type of every run.
	WorkflowName = "Playbook"
	// LoopWorkflowName is the workflow type of a long loop's driver.
	LoopWorkflowName = "PlaybookLoop"
	// LoopBatchWorkflowName is the workflow type of a batch of loop elements.
	LoopBatchWorkflowName = "PlaybookLoopBatch"
	// TaskQueue is the default task queue of workers and runs.
	TaskQueue = "playbook"
	// MemoRetryChain is the memo field of a retry that reuses work: the
	// earlier runs whose files it may read (the run it retried, the run
	// that one retried, and so on), so that `playbook files gc` keeps
	// them, and their sub-playbooks' children, while the retry counts.
	MemoRetryChain = "playbook_retry_chain"
	// QueryEvents returns the run's events after a sequence number.
	QueryEvents = "events"
	// QueryState returns the run's aggregate so far.
	QueryState = "state"
	// QueryPending lists the pending_failed steps waiting for a classification.
	QueryPending = "pending"
	// UpdateClassify classifies a pending_failed step: (step, retry|fail|skip,
	// reason, by, result); reason, by and result are optional (older
	// clients send two arguments) and by defaults to "classify". result,
	// JSON text, goes with skip: the step completes with it.
	UpdateClassify = "classify"
	// UpdateApproval decides a waiting approval step: its one argument is
	// an ApprovalDecision, {"step", "decision": approve|reject,
	// "inputs", "by", "reason"}.
	UpdateApproval = "approval"
	// UpdateEvent sends an event to a run: (event, data, by); data (any
	// JSON) and by are optional. Every wait_event step of the run that
	// waits for that event and has not received one yet, started or not,
	// takes it; the validator refuses an event no such step takes.
	UpdateEvent = "event"
	// QueryApprovals lists the approval steps waiting for a decision.
	QueryApprovals = "approvals"
	// SignalDrain lets running steps finish and starts no new one.
	SignalDrain = "drain"
	// SignalCancelReason records why the run is being cancelled; a client
	// sends it just before its cancel request.
	SignalCancelReason = "cancel_reason"
	// SignalLoopProgress carries a loop driver's progress to its run
	// (LoopProgressSignal), every few seconds of the driver's time.
	SignalLoopProgress = "loop_progress"
	// FailedErrorType is the application error type of a failed run.
	FailedErrorType = "PlaybookFailed"
)

// EventsPage is the most events a client asks one `events` query for: a
// run of thousands of steps has tens of thousands, more than one answer
// may carry. It asks again after the last one it got.
const EventsPage = 1000

// EventsPageBytes bounds one answer of the `events` query by the size of
// its events as JSON, as a client asks: Temporal refuses an answer over
// 2 MB (its blob size limit), which 40 failures with 60 KB messages
// reach. An answer holds one event at least, whatever its size.
const EventsPageBytes = 1 << 20

// LoopBatchSize is the most loop elements one workflow runs. A longer loop
// runs in batches of this size, one after another, each a child workflow,
// so that no history grows past a few thousand events however long the
// list. Within a batch, up to max_in_flight elements run at once.
const LoopBatchSize = 500

// The search attributes a run keeps current when its namespace has them
// (`playbook dev` registers them, `playbook setup` does on a cluster).
const (
	AttrPlaybookName   = "PlaybookName"
	AttrPlaybookStatus = "PlaybookStatus"
	AttrFailedSteps    = "FailedSteps"
	// AttrScheduledStartTime is the search attribute Temporal sets on a
	// run a schedule started (or backfilled): the time it was scheduled for.
	AttrScheduledStartTime = "TemporalScheduledStartTime"
)

// SearchAttributeKind is how a search attribute is indexed.
type SearchAttributeKind int

const (
	Keyword SearchAttributeKind = iota
	KeywordList
)

// SearchAttributes are the search attributes a namespace registers for
// playbook's runs, by name.
var SearchAttributes = map[string]SearchAttributeKind{
	AttrPlaybookName:   Keyword,
	AttrPlaybookStatus: Keyword,
	AttrFailedSteps:    KeywordList,
}

// Besides the failed steps, a run's FailedSteps holds, once it has ended,
// each step that failed with allow_failure as "NAME (warning)" and
// DeadlineMark when its own deadline passed: `list` shows warnings and a
// deadline without opening each run, and `list --status timed_out` finds
// the runs failed by their deadline. A step name holds no space or
// parenthesis, so no entry can be taken for another.
const (
	WarningMark  = " (warning)"
	DeadlineMark = "(deadline)"
)

// Input is the workflow's input: the playbook frozen as text at submission.
type Input struct {
	// File is the playbook's path as submitted, for messages.
	File string `json:"file"`
	// BaseDir is the playbook's directory where it was submitted.
	BaseDir string `json:"base_dir"`
	// Source is the playbook's text.
	Source string `json:"source"`
	// Workload deep-merges into the playbook's workload defaults.
	Workload map[string]any `json:"workload,omitempty"`
	// Files holds, by absolute path, every sub-playbook of the tree, frozen
	// at submission (see submit.LoadBundle).
	Files map[string]string `json:"files,omitempty"`
	// Index keeps the search attributes current; the submitter sets it when
	// the namespace has them.
	Index bool `json:"index,omitempty"`
	// LargeValues: the run's workers keep its payloads over 256 KiB in the
	// run's store, leaving a claim in the history (internal/claims), so its
	// values are bounded by BudgetsFor(true), not by the history's limits.
	// The submitter sets it when it keeps large values in a store itself;
	// a sub-playbook's run inherits it.
	LargeValues bool `json:"large_values,omitempty"`
	// Reuse holds the completed steps of an earlier run that `playbook retry`
	// does not run again.
	Reuse map[string]*StepState `json:"reuse,omitempty"`
	// ReuseElements holds, by loop step, the elements of an earlier run
	// that `playbook retry` does not run again (the step itself runs).
	ReuseElements map[string]*ElementReuse `json:"reuse_elements,omitempty"`
	// ReuseChildren holds, by sub-playbook step, what `playbook retry`
	// reuses of the step's child in the earlier run: the step runs, and
	// its child is a retry of that child.
	ReuseChildren map[string]*ChildReuse `json:"reuse_children,omitempty"`
	// Origin says which run a retry retried, who asked and why.
	Origin *Origin `json:"origin,omitempty"`
	// LogicalTime is the time the run stands for (run.logical_time): when
	// it was submitted, what `run --logical-time` said, the earlier run's
	// for a retry, the parent's for a sub-playbook. Nil in a run a
	// schedule started, whose time is its scheduled time (logicalTime).
	LogicalTime *time.Time `json:"logical_time,omitempty"`
	// Files digests the files the steps read by name (scripts, recovery
	// scripts, sub-playbooks) as they were at submission, by absolute
	// path: what a retry compares to tell whether they changed.
	FileDigests map[string]string `json:"file_digests,omitempty"`
	// Deadline is the deadline a sub-playbook inherits from its parent
	// run (the parent's playbook timeout, or one it inherited): the child
	// winds down by the earlier of it and its own timeout. Nil for a run
	// submitted by hand, and for a cleanup step's sub-playbook.
	Deadline *Deadline `json:"deadline,omitempty"`
	// Trigger is what started the run, which its expressions read as
	// trigger.*: a webhook's delivery or an upstream run (TriggerKind...
	// and the keys docs/LANGUAGE.md lists). Nil for a run started another
	// way.
	Trigger map[string]any `json:"trigger,omitempty"`
}

// ChildReuse is what a retry reuses of a sub-playbook step's child: as
// Input's fields of the same names, for the child run.
type ChildReuse struct {
	// RetryOf is the earlier run's child.
	RetryOf       string                   `json:"retry_of"`
	Reuse         map[string]*StepState    `json:"reuse,omitempty"`
	ReuseElements map[string]*ElementReuse `json:"reuse_elements,omitempty"`
	ReuseChildren map[string]*ChildReuse   `json:"reuse_children,omitempty"`
}

// LoopInput is what a loop's driver gets: the playbook's text (for the
// step's definition), the part of the run's scope its list and tool read,
// and what every element's activity input shares. A run continued as new
// also gets where it is (Next) and what the runs before it counted.
type LoopInput struct {
	File   string         `json:"file"`
	Source string         `json:"source"`
	Step   string         `json:"step"`
	Scope  map[string]any `json:"scope"`
	// Workload is the run's overrides (Input.Workload), from which the
	// driver builds the workload as the run has it (DriverScope).
	Workload map[string]any `json:"workload,omitempty"`
	Common   StepInput      `json:"common"`
	// CancelOnFailure: a failed element cancels the running ones and no
	// more start (failure_mode: cancel).
	CancelOnFailure bool `json:"cancel_on_failure,omitempty"`
	// FullIn says where the elements' results are when the step's result
	// is a stub.
	FullIn string     `json:"full_in"`
	Next   int        `json:"next,omitempty"`
	Tally  *LoopTally `json:"tally,omitempty"`
	// Reuse are the elements a retry reuses: counted in the first run's
	// tally, skipped by every run (which carry its spans, not its results).
	Reuse *ElementReuse `json:"reuse,omitempty"`
	// StubsAsWritten, when set, is which side of the change
	// "truncated-reads" the loop takes: true, reading past a stub reads it
	// as runs before the change did. The run that starts the driver sets
	// it when the loop's scope holds a stub, and a driver that asked sets
	// it for the run it continues as new, so that a loop keeps one side.
	StubsAsWritten *bool `json:"stubs_as_written,omitempty"`
}

// LoopProgressSignal is a driver's progress, signalled to its run.
type LoopProgressSignal struct {
	Step     string       `json:"step"`
	Progress LoopProgress `json:"progress"`
}
