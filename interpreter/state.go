package interpreter

import (
	"fmt"
	"strings"
	"time"
)

// Status is a step's status.
type Status string

const (
	StatusPending       Status = "pending"
	StatusRunning       Status = "running"
	StatusCompleted     Status = "completed"
	StatusFailed        Status = "failed"
	StatusSkipped       Status = "skipped"
	StatusCancelled     Status = "cancelled"
	StatusPendingFailed Status = "pending_failed"
	StatusReused        Status = "reused"
)

// Terminal tells whether a step with this status is resolved for good.
func (s Status) Terminal() bool {
	switch s {
	case StatusCompleted, StatusFailed, StatusSkipped, StatusCancelled, StatusReused:
		return true
	}
	return false
}

// Run statuses.
const (
	RunRunning   = "running"
	RunCompleted = "completed"
	RunFailed    = "failed"
	RunCancelled = "cancelled"
)

// StepError is the structured error of a failed step.
type StepError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Details any    `json:"details"`
}

func (e *StepError) Error() string { return e.Type + ": " + e.Message }

// StepState is where one step stands; it is what the aggregate reports.
type StepState struct {
	Status             Status     `json:"status"`
	Attempts           int        `json:"attempts"`
	Result             any        `json:"result"`
	Error              *StepError `json:"error"`
	RoutedToEnd        bool       `json:"routed_to_end"`
	OriginalFailedStep *string    `json:"original_failed_step"`
	// SkipReason says why a skipped step did not run.
	SkipReason string `json:"skip_reason,omitempty"`
	// Recovery is the failure handler's outcome for the step's last failure:
	// retried, no_handler, no_matching_rule, max_retries_exceeded or error.
	Recovery string `json:"recovery,omitempty"`
	// Classified says who classified the step out of pending_failed, how,
	// and why: "retry by mcp: the input is there now".
	Classified string `json:"classified,omitempty"`
	// AttemptErrors lists every failed attempt, oldest first.
	AttemptErrors []AttemptRecord `json:"attempt_errors,omitempty"`
	// StartedAt and EndedAt are workflow times (deterministic).
	StartedAt *time.Time `json:"started_at,omitempty"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	// Loop is a running loop step's progress over its elements.
	Loop *LoopProgress `json:"loop,omitempty"`
	// TakenNext lists, for a completed step, the steps its `next` led to
	// (empty when no branch held), so that a retry reusing the step takes
	// the same arcs without evaluating its `when` again.
	TakenNext []string `json:"taken_next,omitzero"`

	// priorAttempts counts attempts made before a classification retried it.
	priorAttempts int
	pendingSince  time.Time
}

// Note says in one line why a step is not simply completed: its error (with
// the failure handler's outcome and its routing to end), or why it skipped.
func (st *StepState) Note() string {
	if st.Loop != nil {
		return "loop: " + st.Loop.String()
	}
	if st.Error == nil {
		return joinNotes(joinNotes(st.SkipReason, st.classifiedNote()), st.lostNote())
	}
	note := st.Error.Type + ": " + firstLine(st.Error.Message)
	if st.Recovery != "" && st.Recovery != RecoveryNoHandler {
		note += " [" + st.Recovery + "]"
	}
	if st.RoutedToEnd {
		note += " (routed to end)"
	}
	return joinNotes(joinNotes(note, st.classifiedNote()), st.lostNote())
}

// classifiedNote says how a person or an agent classified the step.
func (st *StepState) classifiedNote() string {
	if st.Classified == "" {
		return ""
	}
	return "classified " + st.Classified
}

// lostNote names the attempts lost with their worker, e.g. "attempt 1 lost
// (heartbeat_timeout)"; empty when none was.
func (st *StepState) lostNote() string {
	var lost []string
	for _, a := range st.AttemptErrors {
		// The attempt whose loss failed the step is the error already.
		if a.Lost && (st.Error == nil || !strings.HasPrefix(st.Error.Message, a.Error.Message)) {
			lost = append(lost, fmt.Sprintf("attempt %d lost (%s)", a.Attempt, a.Error.Type))
		}
	}
	return strings.Join(lost, ", ")
}

func joinNotes(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

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
}

// Outcome is how a step's activity ended, as the workflow hands it to Settle.
type Outcome struct {
	Result        any
	Err           *StepError // nil: the step completed
	Attempts      int
	Recovery      string
	AttemptErrors []AttemptRecord
}

// Classification actions for a pending_failed step.
const (
	ClassifyRetry = "retry"
	ClassifyFail  = "fail"
	ClassifySkip  = "skip"
)

// PendingStep is a pending_failed step waiting for a classification.
type PendingStep struct {
	Step     string     `json:"step"`
	Since    time.Time  `json:"since"`
	Attempts int        `json:"attempts"`
	Recovery string     `json:"recovery"`
	Error    *StepError `json:"error"`
}

// Event is one entry of a run's event log.
type Event struct {
	Seq      int        `json:"seq"`
	Time     time.Time  `json:"time"`
	Type     string     `json:"type"`
	Step     string     `json:"step,omitempty"`
	Attempts int        `json:"attempts,omitempty"`
	Message  string     `json:"message,omitempty"`
	Error    *StepError `json:"error,omitempty"`
	// Data holds the event's own fields (routed_to_end, total_steps, ...).
	Data map[string]any `json:"data,omitempty"`
}

// Run is the state of one execution of a playbook. It is a deterministic
// function of the playbook, the workload, and the calls made on it, so the
// workflow adapter replays to the same decisions.
type Run struct {
	pb          *Playbook
	workload    map[string]any
	executionID string
	now         func() time.Time

	states map[string]*StepState
	taken  map[Arc]bool
	// stoppedBy is the first failed step under failure_mode stop or cancel.
	stoppedBy string
	// cancelled: a cancel request came from outside; drained: a drain signal.
	cancelled, drained bool
	// cancelReason is why the run was cancelled or drained, when someone said.
	cancelReason string
	// origin is where a retried run came from (Started).
	origin *Origin
	// cancelling lists the running steps asked to cancel, so each is asked once.
	cancelling map[string]bool
	events     []Event
	// final is the aggregate once `end` has decided.
	final *Aggregate
	// envCache keeps Env's step entries between calls, rows the details' rows.
	envCache    stepsEnv
	rows        map[string]renderedRow
	detailsSize int

	// Old runs' decisions (see options.go).
	shallowWorkload, firstArcOnly bool
}

// NewRun starts the state of a run. workload deep-merges into the
// playbook's defaults (MergeWorkload); now is the clock events are stamped
// with (the workflow's deterministic clock).
func NewRun(pb *Playbook, workload map[string]any, executionID string, now func() time.Time, opts ...RunOption) *Run {
	r := &Run{pb: pb, executionID: executionID, now: now, states: map[string]*StepState{}, taken: map[Arc]bool{}, cancelling: map[string]bool{}}
	for _, o := range opts {
		o(r)
	}
	r.workload = MergeWorkload(pb.Workload, workload)
	if r.shallowWorkload {
		r.workload = make(map[string]any, len(pb.Workload)+len(workload))
		for k, v := range pb.Workload {
			r.workload[k] = v
		}
		for k, v := range workload {
			r.workload[k] = v
		}
	}
	for _, s := range pb.Steps {
		r.states[s.Name] = &StepState{Status: StatusPending}
	}
	return r
}

// Playbook returns the playbook being run.
func (r *Run) Playbook() *Playbook { return r.pb }

// State returns a step's state.
func (r *Run) State(name string) *StepState { return r.states[name] }

// Events returns the event log so far.
func (r *Run) Events() []Event { return r.events }

func (r *Run) emit(e Event) {
	e.Seq = len(r.events) + 1
	e.Time = r.now()
	r.events = append(r.events, e)
}

// started and ended stamp a step's times.
func (r *Run) started(st *StepState) {
	t := r.now()
	st.StartedAt, st.EndedAt = &t, nil
}

func (r *Run) ended(st *StepState) {
	t := r.now()
	st.EndedAt, st.Loop = &t, nil
}

// Ready resolves every pending step whose predecessors have all resolved:
// each is either skipped (and skipping propagates) or marked running and
// returned, in file order, for the caller to start. `end` is never returned;
// see EndReady.
func (r *Run) Ready() []*Step {
	var ready []*Step
	for changed := true; changed; {
		changed = false
		for _, s := range r.pb.Steps {
			st := r.states[s.Name]
			if s.Name == EndStep || st.Status != StatusPending {
				continue
			}
			run, resolved, reason, origin := r.decide(s)
			if !resolved {
				continue
			}
			changed = true
			if run {
				st.Status = StatusRunning
				r.started(st)
				r.emit(Event{Type: "step_started", Step: s.Name})
				ready = append(ready, s)
				continue
			}
			st.Status = StatusSkipped
			st.SkipReason = reason
			r.ended(st)
			if origin != "" {
				st.OriginalFailedStep = &origin
			}
			r.emit(Event{Type: "step_skipped", Step: s.Name, Message: reason, Data: map[string]any{"reason": reason}})
		}
	}
	return ready
}

// decide tells whether a pending step can be resolved now, and if so whether
// it runs; a skip comes with its reason and the failed step behind it.
func (r *Run) decide(s *Step) (run, resolved bool, reason, origin string) {
	arcs := r.pb.incoming[s.Name]
	taken := len(arcs) == 0
	counted := map[string]bool{}
	for _, a := range arcs {
		if r.firstArcOnly && counted[a.From] {
			continue
		}
		counted[a.From] = true
		p := r.states[a.From]
		if !p.Status.Terminal() {
			return false, false, "", ""
		}
		switch {
		case p.Status == StatusFailed || p.Status == StatusCancelled:
			if origin == "" {
				origin = a.From
				reason = fmt.Sprintf("upstream %s %s", a.From, p.Status)
			}
		case p.Status == StatusSkipped && p.OriginalFailedStep != nil:
			if origin == "" {
				origin = *p.OriginalFailedStep
				reason = fmt.Sprintf("upstream %s skipped after %s failed", a.From, origin)
			}
		case r.taken[a]:
			taken = true
		}
	}
	switch {
	case r.cancelled:
		return false, true, "run cancelled", ""
	case r.drained:
		return false, true, "run drained: no new step starts", ""
	case origin != "" && s.OnFailureRun:
		return true, true, "", ""
	case origin != "":
		return false, true, reason, origin
	case !taken:
		return false, true, "no branch led here", ""
	case r.stoppedBy != "" && !s.OnFailureRun:
		return false, true, fmt.Sprintf("not started: %s failed and failure_mode is %s", r.stoppedBy, r.pb.FailureMode), r.stoppedBy
	}
	return true, true, "", ""
}

// Settle records how a step's activity ended: completed, failed, or, with
// use_pending_failed and a failure no exit-code rule matched, pending_failed.
func (r *Run) Settle(name string, o Outcome) {
	st := r.states[name]
	st.AttemptErrors = append(st.AttemptErrors, o.AttemptErrors...)
	st.Recovery = o.Recovery
	// Attempts are retried inside Temporal's activity retry, out of the
	// workflow's sight; their records arrive with the outcome.
	last := st.priorAttempts + o.Attempts
	for _, a := range o.AttemptErrors {
		if a.Attempt < last {
			e := a.Error
			r.emit(Event{Type: "step_retry", Step: name, Attempts: a.Attempt, Error: &e,
				Message: fmt.Sprintf("attempt %d failed; attempt %d followed", a.Attempt, a.Attempt+1),
				Data:    map[string]any{"attempt": a.Attempt, "recovery": a.Recovery}})
		}
	}
	if o.Err != nil && o.Err.Type != ErrCancelled && o.Attempts > 1 {
		r.emit(Event{Type: "step_retry_exhausted", Step: name, Attempts: last, Error: o.Err, Message: fmt.Sprintf("no attempt left after %d", last)})
	}
	switch {
	case o.Err == nil:
		r.Complete(name, o.Result, o.Attempts)
	case o.Err.Type == ErrCancelled:
		r.cancel(name, o.Err, o.Attempts)
	case r.pb.UsePendingFailed && (o.Recovery == RecoveryNoHandler || o.Recovery == RecoveryNoMatchingRule):
		st.Status, st.Error, st.Result = StatusPendingFailed, o.Err, nil
		st.Attempts = st.priorAttempts + o.Attempts
		st.pendingSince = r.now()
		r.ended(st)
		r.emit(Event{Type: "step_pending_failed", Step: name, Attempts: st.Attempts, Error: o.Err, Message: "waiting for a classification: retry, fail or skip"})
	default:
		r.Fail(name, o.Err, o.Attempts)
	}
}

// PriorAttempts counts a step's attempts before a classification retried it.
func (r *Run) PriorAttempts(name string) int { return r.states[name].priorAttempts }

// Pending lists the steps waiting for a classification, in file order.
func (r *Run) Pending() []PendingStep {
	out := []PendingStep{}
	for _, s := range r.pb.Steps {
		if st := r.states[s.Name]; st.Status == StatusPendingFailed {
			out = append(out, PendingStep{Step: s.Name, Since: st.pendingSince, Attempts: st.Attempts, Recovery: st.Recovery, Error: st.Error})
		}
	}
	return out
}

// CheckClassify tells why a classification cannot apply, or nil.
func (r *Run) CheckClassify(name, action string) error {
	st := r.states[name]
	switch {
	case st == nil:
		return fmt.Errorf("no step %q in playbook %s", name, r.pb.Name)
	case st.Status != StatusPendingFailed:
		return fmt.Errorf("step %q is %s, not pending_failed: only a pending_failed step can be classified", name, st.Status)
	case action != ClassifyRetry && action != ClassifyFail && action != ClassifySkip:
		return fmt.Errorf("action %q: classify a step as retry, fail or skip", action)
	}
	return nil
}

// Classify resolves a pending_failed step: retry runs it again (its attempts
// add up), fail fails it as if no one had waited, skip skips it; by is who
// classified (a person, mcp, or pending_timeout) and reason why, if given.
func (r *Run) Classify(name, action, by, reason string) error {
	if err := r.CheckClassify(name, action); err != nil {
		return err
	}
	st := r.states[name]
	ev := Event{Type: "step_classified", Step: name, Message: action + " (by " + by + ")"}
	st.Classified = action + " by " + by
	if reason != "" {
		ev.Message += ": " + reason
		ev.Data = map[string]any{"action": action, "by": by, "reason": reason}
		st.Classified += ": " + reason
	}
	r.emit(ev)
	switch action {
	case ClassifyRetry:
		st.priorAttempts, st.Status, st.Error = st.Attempts, StatusPending, nil
	case ClassifyFail:
		st.Attempts -= st.priorAttempts
		r.Fail(name, st.Error, st.Attempts)
	case ClassifySkip:
		st.Status, st.SkipReason = StatusSkipped, "classified "+st.Classified
		r.emit(Event{Type: "step_skipped", Step: name, Message: st.SkipReason, Data: map[string]any{"reason": st.SkipReason}})
	}
	return nil
}

// Complete records a step's result and takes its outgoing arcs: every plain
// `next` and `depends_on` arc, and of the when/else items the first that holds.
// A `when` that cannot be evaluated fails the step.
func (r *Run) Complete(name string, result any, attempts int) {
	st := r.states[name]
	st.Status, st.Result, st.Attempts, st.Error = StatusCompleted, result, st.priorAttempts+attempts, nil
	attempts = st.Attempts
	r.ended(st)
	taken, err := r.nextTargets(name)
	if err != nil {
		r.Fail(name, &StepError{Type: "expression_error", Message: "next: when " + err.Error()}, attempts)
		return
	}
	st.TakenNext = taken
	r.takeArcs(name, taken)
	r.emit(Event{Type: "step_completed", Step: name, Attempts: attempts})
}

// nextTargets evaluates a completed step's `next`: every plain target, and
// of the when/else items the first that holds. It is never nil.
func (r *Run) nextTargets(name string) ([]string, error) {
	s := r.pb.byName[name]
	take := []string{}
	var env map[string]any
	for _, rule := range s.Next {
		if rule.When == nil {
			take = append(take, rule.Then...)
			if !rule.Else {
				continue
			}
			break
		}
		if env == nil {
			env = r.Env()
		}
		ok, err := rule.When.EvalBool(env)
		if err != nil {
			return nil, err
		}
		if ok {
			take = append(take, rule.Then...)
			break
		}
	}
	return take, nil
}

// takeArcs takes a completed step's outgoing arcs: its `next` arcs to
// targets, and every `depends_on` arc out of it.
func (r *Run) takeArcs(name string, targets []string) {
	for _, to := range targets {
		r.taken[Arc{From: name, To: to, Kind: ArcNext}] = true
	}
	for _, a := range r.pb.outgoing[name] {
		if a.Kind == ArcDependsOn {
			r.taken[a] = true
		}
	}
}

// Reuse marks steps an earlier run completed as `reused`, with that run's
// results, before anything starts: they do not run again, and their arcs
// are taken as they were. Every predecessor of a reused step must be reused
// too (ReusableSteps picks such a set).
func (r *Run) Reuse(earlier map[string]*StepState) {
	var reused []string
	// Steps completed in a run that recorded no taken_next (an engine from
	// before it did) evaluate their `next` again, after all are marked.
	var evaluate []string
	for _, s := range r.pb.Steps {
		prev := earlier[s.Name]
		if s.Name == EndStep || prev == nil || (prev.Status != StatusCompleted && prev.Status != StatusReused) {
			continue
		}
		st := r.states[s.Name]
		st.Status, st.Result, st.TakenNext = StatusReused, prev.Result, prev.TakenNext
		if prev.TakenNext == nil {
			evaluate = append(evaluate, s.Name)
		}
		reused = append(reused, s.Name)
		r.emit(Event{Type: "step_reused", Step: s.Name, Message: "completed in an earlier run; not run again"})
	}
	broken := map[string]bool{}
	for _, name := range evaluate {
		taken, err := r.nextTargets(name) // it held when the step completed
		r.states[name].TakenNext, broken[name] = taken, err != nil
	}
	for _, name := range reused {
		if !broken[name] {
			r.takeArcs(name, r.states[name].TakenNext)
		}
	}
}

// Fail records a step whose retries are spent. It routes to `end`; under
// failure_mode stop no new step starts after it.
func (r *Run) Fail(name string, err *StepError, attempts int) {
	st := r.states[name]
	st.Status, st.Result, st.Error, st.Attempts = StatusFailed, nil, err, st.priorAttempts+attempts
	attempts = st.Attempts
	st.RoutedToEnd = true
	st.OriginalFailedStep = &name
	r.ended(st)
	if r.pb.FailureMode != FailureContinue && r.stoppedBy == "" {
		r.stoppedBy = name
	}
	r.emit(Event{Type: "step_failed", Step: name, Attempts: attempts, Error: err, Message: "routed to end",
		Data: map[string]any{"routed_to_end": true, "original_failed_step": name}})
}

// ErrCancelled is the error type of a step whose activity was cancelled.
const ErrCancelled = "cancelled"

// cancel records a step whose activity stopped on a cancellation: it routes
// to `end` like a failure, but does not count as one.
func (r *Run) cancel(name string, err *StepError, attempts int) {
	st := r.states[name]
	st.Status, st.Result, st.Error, st.Attempts = StatusCancelled, nil, err, st.priorAttempts+attempts
	st.RoutedToEnd = true
	r.ended(st)
	if r.stoppedBy != "" {
		origin := r.stoppedBy
		st.OriginalFailedStep = &origin
	}
	r.emit(Event{Type: "step_cancelled", Step: name, Attempts: st.Attempts, Message: err.Message})
}

// CancelRun records a cancel request from outside: running steps are to be
// cancelled (see ToCancel), pending ones skip, steps waiting for a
// classification are cancelled, and the run ends cancelled after `end`.
func (r *Run) CancelRun(reason string) {
	if r.cancelled {
		return
	}
	r.cancelled = true
	r.emit(r.withReason(Event{Type: "cancel_requested", Message: reason}))
	for _, s := range r.pb.Steps {
		if r.states[s.Name].Status == StatusPendingFailed {
			r.cancel(s.Name, &StepError{Type: ErrCancelled, Message: "the run was cancelled while the step waited for a classification"}, 0)
		}
	}
}

// RecordCancelReason keeps why the run is being cancelled: a client sends
// it (signal cancel_reason) before its cancel request, which workflow code
// cannot read a reason from. Empty reasons are ignored.
func (r *Run) RecordCancelReason(reason string) {
	if reason != "" {
		r.cancelReason = reason
	}
}

// CancelReason is why the run was cancelled or drained, if it was and
// someone said.
func (r *Run) CancelReason() string {
	if !r.Cancelled() {
		return ""
	}
	return r.cancelReason
}

func (r *Run) withReason(e Event) Event {
	if r.cancelReason != "" {
		e.Message += ": " + r.cancelReason
		e.Data = map[string]any{"cancel_reason": r.cancelReason}
	}
	return e
}

// Drain starts no new step; running steps finish; the run ends cancelled.
func (r *Run) Drain() {
	if !r.drained {
		r.drained = true
		r.emit(r.withReason(Event{Type: "drain_requested", Message: "running steps finish; no new step starts"}))
	}
}

// Cancelled tells whether the run was cancelled or drained.
func (r *Run) Cancelled() bool { return r.cancelled || r.drained }

// ToCancel lists the running steps to cancel now: all of them after a
// cancel request, and under failure_mode cancel after a failure all but
// those with on_failure: run. Each step is listed once.
func (r *Run) ToCancel() []string {
	if !r.cancelled && (r.pb.FailureMode != FailureCancel || r.stoppedBy == "") {
		return nil
	}
	var out []string
	for _, s := range r.pb.Steps {
		if r.states[s.Name].Status != StatusRunning || r.cancelling[s.Name] || (!r.cancelled && s.OnFailureRun) {
			continue
		}
		r.cancelling[s.Name] = true
		out = append(out, s.Name)
	}
	return out
}

// EndReady tells whether every step but `end` has resolved.
func (r *Run) EndReady() bool {
	for _, s := range r.pb.Steps {
		if s.Name != EndStep && !r.states[s.Name].Status.Terminal() {
			return false
		}
	}
	return true
}

// Running lists the steps now running, in file order.
func (r *Run) Running() []string {
	var out []string
	for _, s := range r.pb.Steps {
		if r.states[s.Name].Status == StatusRunning {
			out = append(out, s.Name)
		}
	}
	return out
}

// StartEnd marks `end` running once everything else has resolved.
func (r *Run) StartEnd() {
	r.states[EndStep].Status = StatusRunning
	r.started(r.states[EndStep])
	r.emit(Event{Type: "step_started", Step: EndStep})
}

// Env is what step expressions and templates see.
func (r *Run) Env() map[string]any {
	return map[string]any{
		"workload":     r.workload,
		"steps":        r.stepsEnv(),
		"execution_id": r.executionID,
		"playbook":     map[string]any{"name": r.pb.Name, "description": r.pb.Description},
	}
}

// EndEnv is what `end`'s success_when and tool see.
func (r *Run) EndEnv() map[string]any {
	env := r.Env()
	failed := r.failedSteps()
	env["failed_steps"] = failed
	env["failed_steps_count"] = len(failed)
	env["total_steps"] = len(r.pb.Steps) - 1
	return env
}

func (r *Run) failedSteps() []string {
	failed := []string{}
	for _, s := range r.pb.Steps {
		if s.Name != EndStep && r.states[s.Name].Status == StatusFailed {
			failed = append(failed, s.Name)
		}
	}
	return failed
}

// RenderTool renders a step's tool fields against the run's current state.
func (r *Run) RenderTool(s *Step) (map[string]any, error) {
	env := r.Env()
	if s.Name == EndStep {
		env = r.EndEnv()
	}
	out, err := renderValue(s.Tool.Spec, r.pb.templates, env)
	if err != nil {
		return nil, err
	}
	return out.(map[string]any), nil
}
