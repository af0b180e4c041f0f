// Package engine is the run's pure state machine: which steps are ready,
// what a result or a failure does to the run, classification, cancel and
// drain, loops, and how `end` aggregates it, as a function of the playbook,
// the workload and the outcomes fed to it in history order. It never
// imports the Temporal SDK; playbookwf turns its decisions into
// activities, child workflows and timers.
package engine

import (
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// Event is one entry of a run's event log.
type Event struct {
	Seq      int                 `json:"seq"`
	Time     time.Time           `json:"time"`
	Type     string              `json:"type"`
	Step     string              `json:"step,omitempty"`
	Attempts int                 `json:"attempts,omitempty"`
	Message  string              `json:"message,omitempty"`
	Error    *contract.StepError `json:"error,omitempty"`
	// Data holds the event's own fields (routed_to_end, total_steps, ...).
	Data map[string]any `json:"data,omitempty"`
}

// Run is the state of one execution of a playbook. It is a deterministic
// function of the playbook, the workload, and the calls made on it, so the
// workflow adapter replays to the same decisions.
type Run struct {
	pb          *spec.Playbook
	workload    map[string]any
	executionID string
	now         func() time.Time

	states map[string]*contract.StepState
	// ordered holds the same states in file order (pb.Steps), for the
	// loops over every step that run each time one settles.
	ordered []*contract.StepState
	taken   map[spec.Arc]bool
	// stoppedBy is the first failed step under failure_mode stop or cancel.
	stoppedBy string
	// cancelled: a cancel request came from outside; drained: a drain signal.
	cancelled, drained bool
	// cancelReason is why the run was cancelled or drained, when someone said.
	cancelReason string
	// deadline is the run's deadline (WithDeadline), nil without one;
	// timedOut: it passed before end ran; deadlineFirst: before any
	// cancel or drain, so that it decides the outcome.
	deadline                *contract.Deadline
	timedOut, deadlineFirst bool
	// byDeadline lists the running steps the deadline cancelled.
	byDeadline map[string]bool
	// origin is where a retried run came from (Started).
	origin *contract.Origin

	// cancelling lists the running steps asked to cancel, so each is asked once.
	cancelling map[string]bool
	events     []Event
	// final is the aggregate once `end` has decided.
	final *contract.Aggregate
	// envCache keeps Env's step entries between calls, rows the details' rows.
	envCache    stepsEnv
	rows        []renderedRow // in file order
	detailsSize int

	// rd is what Ready and EndReady keep between calls (ready.go).
	rd readiness

	// Old runs' decisions (see options.go).
	shallowWorkload, firstArcOnly bool
	// nullSafeAllowed: see WithNullSafeComparisons; nullMemberAllowed:
	// see WithNullSafeMembers.
	nullSafeAllowed, nullMemberAllowed func() bool
	// cancelledFailsAllowed: see WithCancelledFailsAtOnce.
	cancelledFailsAllowed func() bool
	// truncatedReadsAllowed: see WithTruncatedReads.
	truncatedReadsAllowed func() bool
	// stubCache says which steps' results hold a stub (stubbed), and
	// workloadHasStub whether the workload does, once asked.
	stubCache       map[string]stubSeen
	workloadHasStub *bool
	// logicalTime is run.logical_time (WithLogicalTime).
	logicalTime string
	// trigger is trigger.* (WithTrigger).
	trigger map[string]any
	// largeValues: see WithLargeValues.
	largeValues bool
	// queued: the run waits for a slot of its concurrency key (Queue);
	// refused: why its key's limit refused it (Refuse).
	queued  *contract.QueuedRun
	refused string
}

// NewRun starts the state of a run. workload deep-merges into the
// playbook's defaults (MergeWorkload); now is the clock events are stamped
// with (the workflow's deterministic clock).
func NewRun(pb *spec.Playbook, workload map[string]any, executionID string, now func() time.Time, opts ...RunOption) *Run {
	r := &Run{pb: pb, executionID: executionID, now: now, states: map[string]*contract.StepState{}, taken: map[spec.Arc]bool{}, cancelling: map[string]bool{}, byDeadline: map[string]bool{}}
	for _, o := range opts {
		o(r)
	}
	r.workload = spec.MergeWorkload(pb.Workload, workload)
	if r.shallowWorkload {
		r.workload = make(map[string]any, len(pb.Workload)+len(workload))
		//workflowcheck:ignore order-free: fills a map
		for k, v := range pb.Workload {
			r.workload[k] = v
		}
		//workflowcheck:ignore order-free: fills a map
		for k, v := range workload {
			r.workload[k] = v
		}
	}
	r.ordered = make([]*contract.StepState, len(pb.Steps))
	for i, s := range pb.Steps {
		r.ordered[i] = &contract.StepState{Status: contract.StatusPending}
		r.states[s.Name] = r.ordered[i]
	}
	r.rd = newReadiness(pb)
	return r
}

// Playbook returns the playbook being run.
func (r *Run) Playbook() *spec.Playbook { return r.pb }

// State returns a step's state.
func (r *Run) State(name string) *contract.StepState { return r.states[name] }

// Events returns the event log so far.
func (r *Run) Events() []Event { return r.events }

func (r *Run) emit(e Event) {
	if e.Step != "" {
		r.rd.note(e.Step)
	}
	e.Seq = len(r.events) + 1
	e.Time = r.now()
	r.events = append(r.events, e)
}

// started and ended stamp a step's times.
func (r *Run) started(st *contract.StepState) {
	t := r.now()
	st.StartedAt, st.EndedAt = &t, nil
}

func (r *Run) ended(st *contract.StepState) {
	t := r.now()
	st.EndedAt, st.Loop, st.Waiting = &t, nil, nil
}

// PriorAttempts counts a step's attempts before a classification retried it.
func (r *Run) PriorAttempts(name string) int { return r.states[name].PriorAttempts }

// Reuse marks steps an earlier run completed as `reused`, with that run's
// results, before anything starts: they do not run again, and their arcs
// are taken as they were. Every predecessor of a reused step must be reused
// too (ReusableSteps picks such a set).
func (r *Run) Reuse(earlier map[string]*contract.StepState) {
	var reused []string
	// Steps completed in a run that recorded no taken_next (an engine from
	// before it did) evaluate their `next` again, after all are marked.
	var evaluate []string
	for _, s := range r.pb.Steps {
		prev := earlier[s.Name]
		if s.Name == spec.EndStep || prev == nil || (prev.Status != contract.StatusCompleted && prev.Status != contract.StatusReused) {
			continue
		}
		st := r.states[s.Name]
		st.Status, st.Result, st.TakenNext = contract.StatusReused, prev.Result, prev.TakenNext
		// Its files stay where the earlier run put them: a step after it
		// reads them from the earlier run's keys.
		st.Files = prev.Files
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

// Running lists the steps now running, in file order.
func (r *Run) Running() []string {
	var out []string
	for _, s := range r.pb.Steps {
		if r.states[s.Name].Status == contract.StatusRunning {
			out = append(out, s.Name)
		}
	}
	return out
}
