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

	"playbook/internal/codec"
	"playbook/interpreter/contract"
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
	return nil, fmt.Errorf("%s ended without an aggregate: %w", wr.GetID(), err)
}

// FrozenInput reads the input a run was started with: its playbook text,
// sub-playbooks and workload, from the first event of its history.
func FrozenInput(ctx context.Context, c Client, run string) (contract.Input, error) {
	var in contract.Input
	it := c.GetWorkflowHistory(ctx, run, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
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
