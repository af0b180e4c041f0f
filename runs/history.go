package runs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"playbook/internal/claims"
	"playbook/internal/codec"
	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
)

// Result waits for the run and reads its aggregate, whatever the outcome:
// a failed run's is its failure's details, a cancelled one's its
// cancellation's.
func Result(ctx context.Context, wr client.WorkflowRun) (*contract.Aggregate, error) {
	var agg contract.Aggregate
	err := wr.Get(ctx, &agg)
	if err == nil {
		return &agg, nil
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == contract.FailedErrorType && appErr.Details(&agg) == nil {
		return &agg, nil
	}
	var canErr *temporal.CanceledError
	if errors.As(err, &canErr) && canErr.HasDetails() && canErr.Details(&agg) == nil {
		return &agg, nil
	}
	var unreadable *claims.UnreadableError
	if errors.As(err, &unreadable) {
		// The aggregate is there, as a large value the store must give.
		return nil, fmt.Errorf("%s's result cannot be read: %w", wr.GetID(), unreadable)
	}
	var terminated *temporal.TerminatedError
	if errors.As(err, &terminated) {
		return nil, fmt.Errorf("%s was terminated (Temporal's hard stop: `end` did not run, and there is no aggregate); `playbook status %s` shows where its steps stood: %w", wr.GetID(), wr.GetID(), err)
	}
	return nil, fmt.Errorf("%s ended without an aggregate: %w", wr.GetID(), err)
}

// FrozenInput reads the input a run was started with: its playbook text,
// sub-playbooks and workload, from the first event of its history.
func FrozenInput(ctx context.Context, c Client, run string) (contract.Input, error) {
	return frozenInput(ctx, c, run, "")
}

// frozenInput is FrozenInput of the Temporal run runID of run ("": its
// latest).
func frozenInput(ctx context.Context, c Client, run, runID string) (contract.Input, error) {
	var in contract.Input
	it := c.GetWorkflowHistory(ctx, run, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return in, fmt.Errorf("%s has no history", run)
	}
	first, err := it.Next()
	if err != nil {
		return in, notFound(run, err)
	}
	payloads := first.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()
	if len(payloads) != 1 {
		return in, errors.New(run + " is not a playbook run")
	}
	dc, err := PayloadConverter()
	if err != nil {
		return in, err
	}
	if err := dc.FromPayload(payloads[0], &in); err != nil {
		return in, fmt.Errorf("%s is not a playbook run: %v", run, err)
	}
	in.Index = false
	return in, nil
}

// PlaybookOf is the name of the playbook the latest run of workflow run
// runs, and that run's Temporal run ID: from its search attributes, or
// its frozen input in a namespace without them. A NotFoundError when no
// run has the ID or the workflow is not a playbook run.
func PlaybookOf(ctx context.Context, c Client, run string) (name, runID string, err error) {
	d, err := c.DescribeWorkflowExecution(ctx, run, "")
	if err != nil {
		return "", "", notFound(run, err)
	}
	info := d.GetWorkflowExecutionInfo()
	runID = info.GetExecution().GetRunId()
	if info.GetType().GetName() != contract.WorkflowName {
		return "", "", &NotFoundError{Run: run, Err: errors.New(run + " is not a playbook run")}
	}
	// Search attributes are never encrypted: the default converter reads them.
	if p := info.GetSearchAttributes().GetIndexedFields()[contract.AttrPlaybookName]; p != nil {
		if converter.GetDefaultDataConverter().FromPayload(p, &name) == nil && name != "" {
			return name, runID, nil
		}
	}
	in, err := frozenInput(ctx, c, run, runID)
	if err != nil {
		return "", "", err
	}
	pb, err := spec.Parse(in.File, []byte(in.Source))
	if err != nil {
		// Not told as such to a caller that may not see it (a hook asking
		// about a run of another playbook): a run of no playbook it knows.
		return "", "", &NotFoundError{Run: run, Err: fmt.Errorf("%s: its frozen playbook does not parse: %w", run, err)}
	}
	return pb.Name, runID, nil
}

// PayloadConverter reads a history's payloads: with the codec key of
// $PLAYBOOK_CODEC_KEY or $PLAYBOOK_CODEC_KEY_FILE when one is set.
func PayloadConverter() (converter.DataConverter, error) {
	keys, err := codec.Load("")
	if err != nil || keys == nil {
		return converter.GetDefaultDataConverter(), err
	}
	return keys.DataConverter(), nil
}

// LastTaskFailure is ": " and why the run's last workflow task failed, as
// its history says; empty when it cannot be read.
func LastTaskFailure(ctx context.Context, c Client, wr client.WorkflowRun) string {
	it := c.GetWorkflowHistory(ctx, wr.GetID(), wr.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	why := ""
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return why
		}
		if a := e.GetWorkflowTaskFailedEventAttributes(); a != nil {
			why = fmt.Sprintf(" (%s: %s)", strings.ToLower(strings.TrimPrefix(enumspb.WorkflowTaskFailedCause_name[int32(a.GetCause())], "WORKFLOW_TASK_FAILED_CAUSE_")), expr.FirstLine(a.GetFailure().GetMessage()))
		}
	}
	return why
}
