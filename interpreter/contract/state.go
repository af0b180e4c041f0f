package contract

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"playbook/interpreter/spec/expr"
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
	// RunCompletedWithWarnings: the run succeeded, and some step with
	// allow_failure failed (Aggregate.WarningSteps).
	RunCompletedWithWarnings = "completed_with_warnings"
	RunFailed                = "failed"
	RunCancelled             = "cancelled"
	// RunWaiting: a step waits for a person's decision (an approval); the
	// run is running otherwise.
	RunWaiting = "waiting"
	// RunQueued: the run waits for a slot of its concurrency key and has
	// run no step yet.
	RunQueued = "queued"
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
	// AllowedFailure says that the step failed with allow_failure: a
	// warning, not routed to end, its dependants run.
	AllowedFailure bool `json:"allowed_failure,omitempty"`
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
	// Files are the files the step handed on to the run's store, by their
	// path in its working directory (steps.NAME.files).
	Files map[string]FileRef `json:"files,omitempty"`
	// StartedAt and EndedAt are workflow times (deterministic).
	StartedAt *time.Time `json:"started_at,omitempty"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	// Loop is a running loop step's progress over its elements.
	Loop *LoopProgress `json:"loop,omitempty"`
	// TakenNext lists, for a completed step, the steps its `next` led to
	// (empty when no branch held), so that a retry reusing the step takes
	// the same arcs without evaluating its `when` again.
	TakenNext []string `json:"taken_next,omitzero"`
	// Waiting is set while the step waits for a person (an approval).
	Waiting *Waiting `json:"waiting,omitempty"`

	// PriorAttempts counts attempts made before a classification retried
	// it; PendingSince is when it became pending_failed. The run keeps
	// both; neither is part of the aggregate.
	PriorAttempts int       `json:"-"`
	PendingSince  time.Time `json:"-"`
}

// Note says in one line why a step is not simply completed: its error (with
// the failure handler's outcome and its routing to end), or why it skipped.
func (st *StepState) Note() string {
	if st.Waiting != nil {
		return Cut("waiting for "+st.Waiting.For+" since "+st.Waiting.Since.UTC().Format(time.RFC3339)+": "+expr.FirstLine(st.Waiting.Message), 300)
	}
	if st.Loop != nil {
		return "loop: " + st.Loop.String()
	}
	if st.Error == nil {
		return joinNotes(joinNotes(st.SkipReason, st.classifiedNote()), st.lostNote())
	}
	note := st.Error.Type + ": " + expr.FirstLine(st.Error.Message)
	if st.Recovery != "" && st.Recovery != RecoveryNoHandler {
		note += " [" + st.Recovery + "]"
	}
	if st.RoutedToEnd {
		note += " (routed to end)"
	}
	if st.AllowedFailure {
		note += " (allowed to fail)"
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
// (heartbeat_timeout)"; empty when none was. A loop's are told once per
// attempt and error type, with the indexes of the elements that lost it:
// "attempt 1 lost (heartbeat_timeout) at indexes 0-41, 43".
func (st *StepState) lostNote() string {
	var lost []string
	indexes := map[string][]int{}
	for _, a := range st.AttemptErrors {
		// The attempt whose loss failed the step is the error already.
		if !a.Lost || (st.Error != nil && strings.HasPrefix(st.Error.Message, a.Error.Message)) {
			continue
		}
		line := fmt.Sprintf("attempt %d lost (%s)", a.Attempt, a.Error.Type)
		if m := elementPrefix.FindStringSubmatch(a.Error.Message); m != nil {
			i, _ := strconv.Atoi(m[1])
			if _, seen := indexes[line]; !seen {
				lost = append(lost, line)
			}
			indexes[line] = append(indexes[line], i)
			continue
		}
		lost = append(lost, line)
	}
	for k, line := range lost {
		if ix := indexes[line]; len(ix) > 0 {
			lost[k] = line + " at " + indexRanges(ix)
		}
	}
	return strings.Join(lost, ", ")
}

// elementPrefix is how a loop's attempt records name their element
// (engine.CombineLoop): "element 2 of 4 (index 1): ...".
var elementPrefix = regexp.MustCompile(`^element \d+ of \d+ \(index (\d+)\): `)

// indexRanges writes loop indexes as ranges: "index 3", "indexes 0-41, 43".
func indexRanges(ix []int) string {
	slices.Sort(ix)
	ix = slices.Compact(ix)
	if len(ix) == 1 {
		return fmt.Sprintf("index %d", ix[0])
	}
	var parts []string
	for start := 0; start < len(ix); {
		end := start
		for end+1 < len(ix) && ix[end+1] == ix[end]+1 {
			end++
		}
		if end == start {
			parts = append(parts, fmt.Sprint(ix[start]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ix[start], ix[end]))
		}
		start = end + 1
	}
	return "indexes " + strings.Join(parts, ", ")
}

func joinNotes(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}
