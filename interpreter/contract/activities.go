// Package contract is what a run's history records: the activities' names,
// input and output, failure details, attempt records, error kinds, a step's
// state and the aggregate. Their JSON names never change (recorded
// histories must still read; playbookwf's TestRecordedNamesStay holds
// them). The budget on what a run writes to its history is here too.
package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"playbook/interpreter/spec"
)

// This file is the contract between the workflow and the activities: the
// activity names and the data each passes to the other. Both sides import
// it from here, so the workflow never depends on the package that runs
// processes. Field names are in recorded histories: never rename one.

// RunStepName is the activity type every step runs as.
const RunStepName = "RunStep"

// NotifyName is the activity type that posts a run's aggregate to a webhook.
const NotifyName = "Notify"

// StepInput is one step's rendered tool and the context an attempt needs.
type StepInput struct {
	WorkflowID string         `json:"workflow_id"`
	RunID      string         `json:"run_id"`
	Step       string         `json:"step"`
	Kind       string         `json:"kind"`
	Spec       map[string]any `json:"spec"`
	// BaseDir is the submitted playbook's directory; relative paths resolve
	// against it where the worker has it, else against the worker's directory.
	BaseDir string `json:"base_dir,omitempty"`
	// Timeout bounds one attempt; the activity enforces it itself so that the
	// timeout goes through the retry decision like any failure.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Retry is the step's retry block; its expressions travel as source and
	// are compiled again where the attempt runs.
	Retry   spec.Retry           `json:"retry"`
	Handler *spec.FailureHandler `json:"handler,omitempty"`
	// PriorAttempts counts the step's attempts before this activity (a
	// classification can run a step again); logs, PLAYBOOK_ATTEMPT and
	// attempt records number attempts across both.
	PriorAttempts int `json:"prior_attempts,omitempty"`
	// Scope is the run's expression scope, sent only when the step has
	// retry_when or stop_when.
	Scope map[string]any `json:"scope,omitempty"`
	// Lost is the step's budget of attempts lost with their worker; nil in
	// a run started before lost attempts were retried apart, whose every
	// attempt counts against its retry block.
	Lost *LostSpec `json:"lost,omitempty"`
	// LogicalTime is the run's run.logical_time (RFC 3339, UTC), which a
	// process step reads as PLAYBOOK_LOGICAL_TIME; "" in a run from before.
	LogicalTime string `json:"logical_time,omitempty"`
	// Secrets are the tool fields that name a secret in the playbook's
	// text ("env.TOKEN" to "api_token", Tool.SecretFields): the activity
	// reads those, and only those, from the worker's secrets directory.
	Secrets map[string]string `json:"secrets,omitempty"`
	// ItemSHA256 is the digest of a loop element's item (ItemDigest): the
	// activity does not read it; a retry matches the elements of the new
	// list to those of the earlier run by it. A digest, not the item, so
	// that an element's input stays the size of what it runs. Absent in a
	// run from before.
	ItemSHA256 string `json:"item_sha256,omitempty"`
	// Files are the files the attempt takes from the run's store before
	// its command starts and hands on after it succeeds; nil: none.
	Files *StepFiles `json:"files,omitempty"`
	// Local is set for a local step (`local: true`): its attempts run as
	// local activities, and what they carry from one to the next is here
	// rather than in heartbeat details, which a local activity has none of.
	Local *LocalAttempts `json:"local,omitempty"`
	// LargeValues: the run keeps large values in its store
	// (Input.LargeValues); the attempt's result may be as large as
	// LargeValueBudget when its worker keeps them too.
	LargeValues bool `json:"large_values,omitempty"`
}

// LocalAttempts is what a local step's next local activity is given of
// the ones before it: a retry delay over spec.LocalRetryWithin ends a
// local activity (FailureDetails.RetryAfter), and the run starts the next
// one after a timer. Retries within that delay are Temporal's local
// retries, inside one local activity.
type LocalAttempts struct {
	// Before counts the step's attempts in the local activities before.
	Before int `json:"before,omitempty"`
	// Failed are their records.
	Failed []AttemptRecord `json:"failed,omitempty"`
	// Since is when the step's first local activity was scheduled, on the
	// workflow's clock: retry.max_duration counts from it.
	Since time.Time `json:"since"`
}

// StepFiles is what an attempt does with the run's store.
type StepFiles struct {
	// Outputs are the paths or globs, relative to the working directory,
	// of the files uploaded after a successful attempt.
	Outputs []string `json:"outputs,omitempty"`
	// Inputs are the stored files downloaded before the command starts,
	// by their path in the working directory.
	Inputs map[string]FileRef `json:"inputs,omitempty"`
}

// FileRef is a stored file as a step's result lists it
// (steps.NAME.files[PATH]): where it is, its size and its sha256 (hex),
// which a download checks.
type FileRef struct {
	URI    string `json:"uri"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// FileRefOf reads a rendered template's value as a FileRef: a mapping
// with uri, bytes and sha256, as steps.NAME.files[PATH] is.
func FileRefOf(v any) (FileRef, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return FileRef{}, fmt.Errorf("%s, not a stored file (a mapping with uri, bytes and sha256, as steps.NAME.files['PATH'] is)", describe(v))
	}
	var f FileRef
	f.URI, _ = m["uri"].(string)
	f.SHA256, _ = m["sha256"].(string)
	switch n := m["bytes"].(type) {
	case int:
		f.Bytes = int64(n)
	case int64:
		f.Bytes = n
	case float64:
		f.Bytes = int64(n)
	default:
		f.Bytes = -1
	}
	if f.URI == "" || len(f.SHA256) != 64 || f.Bytes < 0 {
		return FileRef{}, fmt.Errorf("%s, not a stored file (a mapping with uri, bytes and sha256, as steps.NAME.files['PATH'] is)", describe(v))
	}
	return f, nil
}

// describe names a value's kind for an error.
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null (no such file?)"
	case string:
		return "a string"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("a %T", v)
}

// FileValues are files as expressions read them (steps.NAME.files).
func FileValues(files map[string]FileRef) map[string]any {
	if len(files) == 0 {
		return nil
	}
	out := make(map[string]any, len(files))
	//workflowcheck:ignore order-free: fills a map by path
	for p, f := range files {
		out[p] = map[string]any{"uri": f.URI, "bytes": f.Bytes, "sha256": f.SHA256}
	}
	return out
}

// LostSpec is a step's budget of lost attempts. The activity's retry policy
// allows the retry block's attempts plus Attempts more, so that the server
// retries an attempt whose worker stopped heartbeating; each attempt counts
// the lost ones before it and fails the step once they exceed Attempts.
type LostSpec struct {
	// Attempts is how many lost attempts are retried; 0: a lost attempt
	// fails the step (`on_lost: fail`).
	Attempts int `json:"attempts"`
}

// StepOutput is a successful step.
type StepOutput struct {
	Result   any `json:"result"`
	Attempts int `json:"attempts"`
	// LogsAt is where the attempt's logs are served (the worker's URL).
	LogsAt string `json:"logs_at,omitempty"`
	// AttemptErrors are the failed attempts before the one that succeeded.
	AttemptErrors []AttemptRecord `json:"attempt_errors,omitempty"`
	// Files are the files the attempt uploaded, by their path.
	Files map[string]FileRef `json:"files,omitempty"`
	// ItemSHA256 is a local loop element's StepInput.ItemSHA256, given
	// back: a local activity's marker records its result and not its
	// input, and a retry matches the elements that completed by it.
	// Absent for an activity (its scheduled event holds its input) and
	// in a run from before.
	ItemSHA256 string `json:"item_sha256,omitempty"`
}

// FailureDetails ride on a failed attempt's application error.
type FailureDetails struct {
	Error         StepError       `json:"error"`
	Attempts      int             `json:"attempts"`
	Recovery      string          `json:"recovery,omitempty"`
	AttemptErrors []AttemptRecord `json:"attempt_errors,omitempty"`
	// RetryAfter, from a local step's attempt, is a retry delay too long
	// to wait within the workflow task: the run waits it on a timer, then
	// starts the step's next local activity (LocalAttempts).
	RetryAfter time.Duration `json:"retry_after,omitempty"`
}

// AttemptLog travels from attempt to attempt as heartbeat details: Temporal
// keeps the last details across retries and the SDK flushes them when an
// attempt fails, so every attempt that ended by itself is on record. One
// missing from it was lost with its worker.
type AttemptLog struct {
	Current int             `json:"current"`
	Failed  []AttemptRecord `json:"failed,omitempty"`
	// LogsAt is where the current attempt's logs are served.
	LogsAt string `json:"logs_at,omitempty"`
}

// NotifyInput is one webhook call.
type NotifyInput struct {
	Event     string `json:"event"` // on_failure or on_success
	Webhook   string `json:"webhook"`
	Aggregate any    `json:"aggregate"`
}

// WithLostAttempts returns records with a lost-attempt record added for
// every attempt from first to last that has none, in attempt order.
func WithLostAttempts(records []AttemptRecord, first, last int) []AttemptRecord {
	have := map[int]bool{}
	for _, r := range records {
		have[r.Attempt] = true
	}
	out := append([]AttemptRecord{}, records...)
	for k := first; k <= last; k++ {
		if !have[k] {
			out = append(out, LostAttempt(k))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Attempt < out[j].Attempt })
	return out
}

// LostAttempt is the record of an attempt whose worker stopped heartbeating.
func LostAttempt(attempt int) AttemptRecord {
	return AttemptRecord{Attempt: attempt, Lost: true, Error: StepError{
		Type: ErrHeartbeatTimeout, Message: fmt.Sprintf("attempt %d was lost: its worker stopped heartbeating", attempt)}}
}

// ItemDigest is the sha256 (hex) of a loop element's item as JSON with
// its keys sorted (CanonicalJSON).
func ItemDigest(item any) string {
	sum := sha256.Sum256(CanonicalJSON(item))
	return hex.EncodeToString(sum[:])
}

// CanonicalJSON is v as JSON with its keys sorted: two values give the
// same bytes when they say the same, whatever their maps' order or their
// numbers' Go types. A value JSON cannot write gives its fmt form.
func CanonicalJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(fmt.Sprint(v))
	}
	var round any
	if json.Unmarshal(b, &round) == nil {
		if again, err := json.Marshal(round); err == nil {
			return again
		}
	}
	return b
}
