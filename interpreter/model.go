// Package interpreter is the pure core of playbook: it parses and validates a
// playbook, builds its step graph, and decides, as a function of its inputs,
// which steps run, what a result or a failure does to the run, and how `end`
// aggregates it. It never imports the Temporal SDK; the workflow adapter in
// interpreter/playbookwf turns its decisions into activities and timers.
package interpreter

import "time"

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

	byName map[string]*Step
	// incoming and outgoing list, for every step, the arcs into and out of it.
	incoming map[string][]Arc
	outgoing map[string][]Arc
	// templates holds every compiled template of every tool, by source text.
	templates map[string]*Template
	// submitErrs are what CheckSubmit reports.
	submitErrs []error
	// lines holds the lines of keys checked after decoding ("workflow",
	// "notify.on_failure"), for ParseStrict's errors.
	lines map[string]int
}

// Step is one node of the graph.
type Step struct {
	Name             string
	Line             int
	Desc             string
	Tool             *Tool // nil: a routing or join point that completes at once
	Timeout          time.Duration
	HeartbeatTimeout time.Duration
	Retry            *Retry // nil: the step runs once
	Next             []NextRule
	DependsOn        []string
	OnFailureRun     bool  // `on_failure: run`: runs even when an upstream failed
	SuccessWhen      *Expr // `end` only
	FailureHandler   *FailureHandler
	Loop             *Loop
	// failureHandlerRef is the name given in the file, resolved at validation.
	failureHandlerRef     string
	failureHandlerRefLine int
	// Injected is true for an `end` the file did not have.
	Injected bool
	// LostAttempts is how many attempts lost with their worker are retried,
	// counted apart from the retry block's attempts; 0 with `on_lost: fail`.
	LostAttempts int
	// lostAttempts is the step's own `lost_attempts`, nil: the playbook's.
	lostAttempts *int
}

// NextRule is one item of `next`: unconditional (When nil, Else false), a
// `when` branch, or the closing `else`.
type NextRule struct {
	When *Expr
	Else bool
	Then []string
	Line int
}

// Tool is what a step runs. Spec holds its fields as written (templates
// unrendered); Render turns it into the values an activity receives.
type Tool struct {
	Kind string
	Line int
	Spec map[string]any
}

// Retry is a step's retry policy, defaults applied. It travels to the
// activity as is (StepInput.Retry); its expressions as their source.
type Retry struct {
	MaxAttempts  int           `json:"max_attempts"`
	InitialDelay time.Duration `json:"initial_delay"`
	Multiplier   float64       `json:"backoff_multiplier"`
	MaxDelay     time.Duration `json:"max_delay"`
	Jitter       bool          `json:"jitter"`
	RetryWhen    *Expr         `json:"retry_when,omitempty"`
	StopWhen     *Expr         `json:"stop_when,omitempty"`
}

// DefaultRetry is what `retry: true` means.
func DefaultRetry() Retry {
	return Retry{MaxAttempts: 3, InitialDelay: time.Second, Multiplier: 2, MaxDelay: 60 * time.Second, Jitter: true}
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

// Step returns the step with this name, or nil.
func (p *Playbook) Step(name string) *Step { return p.byName[name] }

// Incoming returns the arcs that lead into a step.
func (p *Playbook) Incoming(name string) []Arc { return p.incoming[name] }

// End returns the `end` step.
func (p *Playbook) End() *Step { return p.byName[EndStep] }

// FailureHandler is a named set of exit-code rules. It travels to the
// activity as is (StepInput.Handler).
type FailureHandler struct {
	Name  string         `json:"name"`
	Line  int            `json:"-"`
	Rules []ExitCodeRule `json:"rules"`
}

// ExitCodeRule retries a process step whose exit code it matches.
type ExitCodeRule struct {
	ExitCodes      []int  `json:"exit_codes,omitempty"`
	MatchAll       bool   `json:"match_all_exit_codes,omitempty"`
	MaxRetries     int    `json:"max_retries"`
	RecoveryScript string `json:"recovery_script,omitempty"`
}

// DefaultLostAttempts is how many lost attempts of a step are retried when
// neither the step nor the playbook says.
const DefaultLostAttempts = 3

// DefaultMaxRetries is an exit-code rule's max_retries when it gives none.
const DefaultMaxRetries = 3

// Notify holds the webhooks told of the run's outcome after `end` decides.
type Notify struct {
	OnFailure string
	OnSuccess string
}

// Loop runs a step's tool once per element of a list.
type Loop struct {
	In *Expr // the list, evaluated when the step starts; or:
	// Items is a list written in the file.
	Items    []any
	Iterator string
	// Parallel runs up to MaxInFlight elements at once; otherwise one by one.
	Parallel    bool
	MaxInFlight int
}

// DefaultMaxInFlight bounds a parallel loop that sets no max_in_flight.
const DefaultMaxInFlight = 10
