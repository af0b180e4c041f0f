package contract

import (
	"fmt"

	"playbook/interpreter/spec/expr"
)

// A long loop runs in a driver workflow of its own (playbookwf), which may
// continue as new many times over: what it carries from one run to the
// next, and what it returns to its step, is a LoopTally. Its size is
// bounded whatever the loop's length.

// LoopResultBudget bounds the results a loop's tally keeps: past it the
// step's result is a stub (Truncated), and each element's result stays in
// its activity's completion in the driver's history.
const LoopResultBudget = 512 << 10

// loopAttemptRecords bounds the failed attempts a tally keeps.
const loopAttemptRecords = 100

// LoopTally counts a loop's element outcomes as they end, in any order,
// and keeps their results by element index while they fit
// LoopResultBudget. Its JSON names travel between the runs of a driver.
type LoopTally struct {
	Total int `json:"total"`
	// Results are the elements' results by index, of the elements done;
	// dropped (and Truncated set) once ResultBytes is over budget. A map,
	// so that the elements not done yet cost nothing to carry.
	Results     map[int]any `json:"results,omitempty"`
	ResultBytes int         `json:"result_bytes"`
	Truncated   bool        `json:"truncated,omitempty"`
	Done        int         `json:"done"`
	Failed      int         `json:"failed"`
	Cancelled   int         `json:"cancelled"`
	// FirstFailed is the lowest index of a failed element (-1: none), with
	// its error and the failure handler's outcome.
	FirstFailed         int        `json:"first_failed"`
	FirstFailedError    *StepError `json:"first_failed_error,omitempty"`
	FirstFailedRecovery string     `json:"first_failed_recovery,omitempty"`
	// FirstCancelled is the lowest index of a cancelled element (-1: none).
	FirstCancelled int `json:"first_cancelled"`
	// Attempts is the most attempts an element took.
	Attempts int `json:"attempts"`
	// AttemptErrors are the first failed attempts, each labelled with its
	// element; AttemptErrorsDropped counts the ones past them.
	AttemptErrors        []AttemptRecord `json:"attempt_errors,omitempty"`
	AttemptErrorsDropped int             `json:"attempt_errors_dropped,omitempty"`
	// Files are the files the elements done uploaded, as [INDEX]/PATH (as
	// CombineLoop lists a short loop's); they count against the results'
	// budget and are dropped with them.
	Files map[string]FileRef `json:"files,omitempty"`
}

// NewLoopTally is the tally of a loop of n elements, none ended yet.
func NewLoopTally(n int) *LoopTally {
	return &LoopTally{Total: n, Results: map[int]any{}, FirstFailed: -1, FirstCancelled: -1}
}

// Add counts element i's outcome.
func (t *LoopTally) Add(i int, o Outcome) {
	t.Attempts = max(t.Attempts, o.Attempts)
	for _, a := range o.AttemptErrors {
		if len(t.AttemptErrors) == loopAttemptRecords {
			t.AttemptErrorsDropped++
			continue
		}
		a.Error.Message = fmt.Sprintf("%s: %s", ElementLabel(i, t.Total), a.Error.Message)
		t.AttemptErrors = append(t.AttemptErrors, a)
	}
	switch {
	case o.Err == nil:
		t.Done++
		t.keep(i, o.Result)
		t.keepFiles(i, o.Files)
	case o.Err.Type == ErrCancelled:
		t.Cancelled++
		if t.FirstCancelled < 0 || i < t.FirstCancelled {
			t.FirstCancelled = i
		}
	default:
		t.Failed++
		if t.FirstFailed < 0 || i < t.FirstFailed {
			t.FirstFailed, t.FirstFailedError, t.FirstFailedRecovery = i, o.Err, o.Recovery
		}
	}
}

// AddKept counts n elements done whose results, of size bytes, are kept
// elsewhere (a retry's reused elements, which the run that started the
// driver puts into the loop's result): they count against the budget, and
// the list has null in their places.
func (t *LoopTally) AddKept(n, bytes int) {
	t.Done += n
	if t.ResultBytes += bytes; t.ResultBytes > LoopResultBudget {
		t.Truncate()
	}
}

// keep records a result while the results fit their budget.
func (t *LoopTally) keep(i int, result any) {
	n, err := EncodedSize(result)
	if err != nil {
		result = map[string]any{"unencodable": true, "error": err.Error()}
		n, _ = EncodedSize(result)
	}
	t.ResultBytes += n + 1 // and its comma in the list
	if t.Truncated || t.ResultBytes > LoopResultBudget {
		t.Truncate()
		return
	}
	if t.Results == nil {
		t.Results = map[int]any{}
	}
	t.Results[i] = result
}

// keepFiles records element i's files while the results fit their budget.
func (t *LoopTally) keepFiles(i int, files map[string]FileRef) {
	//workflowcheck:ignore order-free: fills a map and sums sizes
	for p, f := range files {
		key := fmt.Sprintf("[%d]/%s", i, p)
		n, _ := EncodedSize(f)
		if t.ResultBytes += n + len(key) + 4; t.Truncated || t.ResultBytes > LoopResultBudget {
			t.Truncate()
			return
		}
		if t.Files == nil {
			t.Files = map[string]FileRef{}
		}
		t.Files[key] = f
	}
}

// Truncate drops the results the tally keeps: the step's result will be a
// stub. A driver does it too when its tally would not fit the input of
// its next run.
func (t *LoopTally) Truncate() {
	t.Truncated, t.Results, t.Files = true, nil, nil
}

// DropAttemptErrors drops the failed attempts the tally keeps (counted
// in AttemptErrorsDropped): what a driver does when its tally would not
// fit the input of its next run.
func (t *LoopTally) DropAttemptErrors() {
	t.AttemptErrorsDropped += len(t.AttemptErrors)
	t.AttemptErrors = nil
}

// Progress is the tally as a running loop's progress.
func (t *LoopTally) Progress(running int) LoopProgress {
	return LoopProgress{Total: t.Total, Done: t.Done, Failed: t.Failed, Cancelled: t.Cancelled, Running: running}
}

// Outcome is the loop step's outcome, as CombineLoop gives it for a short
// loop: the results in element order when every element completed (a stub
// saying where they are, fullIn, when they were over budget); otherwise the
// first failed element's error, or the loop's cancellation.
func (t *LoopTally) Outcome(fullIn string) Outcome {
	o := Outcome{Attempts: t.Attempts, AttemptErrors: t.AttemptErrors}
	if t.AttemptErrorsDropped > 0 {
		o.AttemptErrors = append(o.AttemptErrors, AttemptRecord{Error: StepError{Type: "truncated",
			Message: fmt.Sprintf("%d more failed attempts of the loop's elements are in its history", t.AttemptErrorsDropped)}})
	}
	switch {
	case t.FirstFailed >= 0:
		o.Recovery = t.FirstFailedRecovery
		o.Err = &StepError{Type: t.FirstFailedError.Type,
			Message: fmt.Sprintf("%s failed: %s", ElementLabel(t.FirstFailed, t.Total), t.FirstFailedError.Message),
			Details: map[string]any{"index": t.FirstFailed, "failed_elements": t.Failed, "error": t.FirstFailedError}}
	case t.FirstCancelled >= 0:
		o.Err = &StepError{Type: ErrCancelled, Message: "the loop was cancelled at " + ElementLabel(t.FirstCancelled, t.Total)}
	case t.Truncated:
		o.Result = expr.Truncated(t.ResultBytes+1, LoopResultBudget, fullIn)
	default:
		results := make([]any, t.Total)
		//workflowcheck:ignore order-free: places each result at its index
		for i, v := range t.Results {
			results[i] = v
		}
		o.Result, o.Files = results, t.Files
	}
	return o
}

// ElementLabel names a loop element as people count (1-based) and by its
// index (0-based, as in its activity ID `step[i]`, its log directory and
// loop.index): "element 2 of 4 (index 1)".
func ElementLabel(i, n int) string {
	return fmt.Sprintf("element %d of %d (index %d)", i+1, n, i)
}
