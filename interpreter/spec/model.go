// Package spec is the playbook as the workflow reads it: the AST and the
// replay-safe decoder (Parse), which the workflow runs again on every replay
// of a frozen playbook and so is never stricter than it was, and the checks
// of the step graph after decoding. What only a submission checks, and
// every read of the host, is in playbook/submit.
package spec

import (
	"slices"
	"time"

	"playbook/interpreter/spec/expr"
)

// EndStep is the name of the single terminal step that decides a run's outcome.
const EndStep = "end"

// FailureMode says what else happens when a step fails.
type FailureMode string

const (
	// FailureContinue skips only the failed step's dependants.
	FailureContinue FailureMode = "continue"
	// FailureStop starts no new step; running steps finish. The default.
	FailureStop FailureMode = "stop"
	// FailureCancel starts no new step and cancels the running ones.
	FailureCancel FailureMode = "cancel"
)

// OnTimeout says how a run whose deadline passed ends.
type OnTimeout string

const (
	// TimeoutCancel lets `end` decide: a success_when may accept the run;
	// without one it fails. The default.
	TimeoutCancel OnTimeout = "cancel"
	// TimeoutFail fails the run whatever success_when says.
	TimeoutFail OnTimeout = "fail"
)

// Playbook is a parsed, validated playbook: steps in file order, `end` last.
type Playbook struct {
	File        string
	Name        string
	Description string
	Workload    map[string]any
	FailureMode FailureMode
	Steps       []*Step
	// UsePendingFailed makes failures no rule matched wait for a person's
	// classification instead of failing.
	UsePendingFailed bool
	// PendingTimeout fails a pending_failed step nobody classified; 0: wait.
	PendingTimeout time.Duration
	// Handlers are the named exit-code rule sets steps refer to.
	Handlers map[string]*FailureHandler
	Notify   Notify
	// LostAttempts is how many lost attempts of a step are retried when the
	// step does not say (`lost_attempts`, default DefaultLostAttempts).
	LostAttempts int
	// Schedule is when `playbook schedule apply` runs it; runs ignore it.
	Schedule *Schedule
	// Triggers start runs by themselves once `playbook schedule apply`
	// registered them (`triggers`); runs read what started them as trigger.*.
	Triggers []Trigger
	// Timeout is the run's deadline, from its start (`timeout`); 0: none.
	// When it passes the run winds down and `end` decides (OnTimeout).
	Timeout time.Duration
	// OnTimeout says what a passed deadline makes of the run's outcome.
	OnTimeout OnTimeout
	// Queue is the task queue of the steps that name none (`queue`); "":
	// the run's own.
	Queue string
	// Concurrency limits how many runs of one key run at once
	// (`concurrency`); nil: no limit.
	Concurrency *Concurrency
	// Local makes every step that runs an activity (shell, python, http)
	// a local step, unless it says `local: false` (`local`).
	Local bool
	// Warnings are what a submission's checks point out without refusing
	// the playbook, one `file:line: ...` line each; set by submit, never
	// by Parse.
	Warnings []string `json:"-"`

	byName map[string]*Step
	// incoming and outgoing list, for every step, the arcs into and out of it.
	incoming map[string][]Arc
	outgoing map[string][]Arc
	// templates holds every compiled template of every tool, by source text.
	templates map[string]*expr.Template
	// submitErrs are what CheckSubmit reports (SubmitErrors).
	submitErrs []error
	// broken are the steps whose keys did not all decode: they stay in
	// the graph, and the checks after decoding say nothing more of them
	// (one mistake, one line).
	broken []string
	// brokenHandlers, brokenWorkload: the section did not decode; the
	// checks that read it say nothing of what it lacks.
	brokenHandlers, brokenWorkload bool
	// zonesOnHost: see LookUpZonesOnHost.
	zonesOnHost func() bool
	// lines holds the lines of keys checked after decoding ("workflow",
	// "notify.on_failure"), for ParseStrict's errors.
	lines map[string]int
}

// ArcKind tells how an arc was declared.
type ArcKind int

const (
	// ArcNext comes from the predecessor's `next`.
	ArcNext ArcKind = iota
	// ArcDependsOn comes from the successor's `depends_on`.
	ArcDependsOn
)

// Arc is an edge of the step graph.
type Arc struct {
	From, To string
	Kind     ArcKind
}

// Incoming returns the arcs that lead into a step.
func (p *Playbook) Incoming(name string) []Arc { return p.incoming[name] }

// Templates are every compiled template of every tool, by source text.
func (p *Playbook) Templates() map[string]*expr.Template { return p.templates }

// Outgoing are the arcs that leave the step name.
func (p *Playbook) Outgoing(name string) []Arc { return p.outgoing[name] }

// End returns the `end` step.
func (p *Playbook) End() *Step { return p.byName[EndStep] }

// WithoutBroken are errs but those of steps whose keys did not all decode
// (their decoding errors said what is wrong with them), except a mistake
// in one key that decoded, such as a next naming no step.
func (p *Playbook) WithoutBroken(errs Errors) Errors {
	if len(p.broken) == 0 {
		return errs
	}
	out := errs[:0:0]
	for _, e := range errs {
		if e.standalone || !slices.Contains(p.broken, e.Step) {
			out = append(out, e)
		}
	}
	return out
}

// Broken tells whether the step name's keys did not all decode: what it
// holds is partial (a loop without its block), so later checks take none
// of it as said.
func (p *Playbook) Broken(name string) bool { return slices.Contains(p.broken, name) }

// WorkloadBroken tells whether the workload section did not decode: its
// keys are unknown, and reads of them are not checked.
func (p *Playbook) WorkloadBroken() bool { return p.brokenWorkload }

// SubmitErrors are every problem CheckSubmit reports, in file order.
func (p *Playbook) SubmitErrors() []error { return p.submitErrs }

// KeyLine is the line of a key checked after decoding ("workflow",
// "name", "notify.on_failure"), 0 when the file has none.
func (p *Playbook) KeyLine(key string) int { return p.lines[key] }

// HasArcsOfBothKinds tells whether two steps are joined both by a `next`
// and by a `depends_on`, where WithFirstArcOnly decides differently.
func (p *Playbook) HasArcsOfBothKinds() bool {
	//workflowcheck:ignore order-free: whether any step has both: the same answer in any order
	for _, arcs := range p.incoming {
		from := map[string]bool{}
		for _, a := range arcs {
			if from[a.From] {
				return true
			}
			from[a.From] = true
		}
	}
	return false
}
