package runs

import (
	"context"
	"crypto/rand"
	"errors"
	"path/filepath"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/submit"
)

// Load reads, parses and checks a playbook and its sub-playbooks as a
// submission, and freezes them into a workflow input. Its errors are one
// line naming file, line and step.
func Load(path string) (*spec.Playbook, contract.Input, error) {
	b, err := submit.LoadBundle(path, submit.ReadPlaybook)
	if err != nil {
		return nil, contract.Input{}, err
	}
	return b.Root, Frozen(path, b), nil
}

// Frozen is the workflow's input for a bundle loaded from path: the
// playbook's text, its sub-playbooks' and the digests of the files it runs.
func Frozen(path string, b *submit.Bundle) contract.Input {
	in := contract.Input{File: path, BaseDir: filepath.Dir(b.RootPath), Source: b.Files[b.RootPath]}
	if len(b.Files) > 1 {
		in.Files = b.Files
	}
	in.FileDigests = submit.FileDigests(b.Root, in.BaseDir, in.Files)
	return in
}

// Start is what starting a run takes.
type Start struct {
	Playbook *spec.Playbook
	Input    contract.Input
	// ID is the run's workflow ID; "": NAME-RANDOM (NewRunID).
	ID        string
	TaskQueue string
	// Details are shown with the run (who started it and why); optional.
	Details string
	// LargeValues: the client keeps payloads over 256 KiB in the workers'
	// store (internal/claims), so the run may too (Input.LargeValues).
	LargeValues bool
	// Memo is the run's memo (contract.MemoRetryChain); optional.
	Memo map[string]any
}

// StartRun starts a run of a frozen playbook. An ID in use by an open run
// is an error, never a silent attach to that run. With the namespace's
// search attributes present, the run starts with them and keeps them
// current (its input says so).
func StartRun(ctx context.Context, c Client, namespace string, s Start) (client.WorkflowRun, error) {
	opts, in := StartOptions(ctx, c, namespace, s)
	return c.ExecuteWorkflow(ctx, opts, contract.WorkflowName, in)
}

// StartOptions are the options and the input a run of s starts with (what
// StartRun sends), for a caller that starts it another way (with an
// Update, or answering a run that has its ID: StartOnce).
func StartOptions(ctx context.Context, c Client, namespace string, s Start) (client.StartWorkflowOptions, contract.Input) {
	id := s.ID
	if id == "" {
		id = NewRunID(s.Playbook.Name)
	}
	in := s.Input
	opts := client.StartWorkflowOptions{ID: id, TaskQueue: s.TaskQueue, StaticSummary: Summary(s.Playbook), StaticDetails: s.Details,
		WorkflowExecutionErrorWhenAlreadyStarted: true, WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL, Memo: s.Memo}
	if in.LargeValues = s.LargeValues; in.LargeValues {
		// Its workflow tasks read and write values of up to 64 MiB.
		opts.WorkflowTaskTimeout = time.Minute
	}
	if Indexed(ctx, c, namespace) {
		in.Index = true
		opts.TypedSearchAttributes = StartAttributes(s.Playbook.Name)
	}
	return opts, in
}

// StartOnce starts a run of s unless one has its ID: with once (an
// idempotency key's ID) while any run of that ID, open or closed, is still
// known to the server; with useExisting while an open one is. existing
// says it did not start one, and the run is the one that had the ID. The
// server decides which of many submits starts the run, not a lock of
// ours. Every other refusal is the caller's to explain.
func StartOnce(ctx context.Context, c Client, namespace string, s Start, once, useExisting bool) (wr client.WorkflowRun, existing bool, err error) {
	opts, in := StartOptions(ctx, c, namespace, s)
	if once {
		opts.WorkflowIDReusePolicy = enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE
	}
	wr, err = c.ExecuteWorkflow(ctx, opts, contract.WorkflowName, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && errors.As(err, &started) && started.RunId != "" && (once || useExisting) {
		return c.GetWorkflow(ctx, opts.ID, started.RunId), true, nil
	}
	return wr, false, err
}

// Summary is the one line the Web UI shows for a run of pb.
func Summary(pb *spec.Playbook) string {
	if pb.Description != "" {
		return "playbook " + pb.Name + ": " + pb.Description
	}
	return "playbook " + pb.Name
}

const suffixAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// NewRunID is a new run's default workflow ID: the playbook's name and
// five random letters or digits.
func NewRunID(name string) string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = suffixAlphabet[int(b[i])%len(suffixAlphabet)]
	}
	return name + "-" + string(b)
}

// Check is a front end's last word before runs start on a task queue (the
// CLI's: that the workers polling it can read what it sends); its error
// stops the start, as an InvalidError: nothing is started.
type Check func(ctx context.Context, taskQueue string) error

func runCheck(ctx context.Context, check Check, taskQueue string) error {
	if check == nil {
		return nil
	}
	if err := check(ctx, taskQueue); err != nil {
		return &InvalidError{Err: err}
	}
	return nil
}
