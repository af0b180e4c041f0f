package commands

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"playbook/contract"
	"playbook/engine"
	"playbook/spec"
	"playbook/submit"
)

// retried is a new run of an earlier run's frozen playbook.
type retried struct {
	pb     *spec.Playbook
	run    client.WorkflowRun
	reused []string
}

// retryError is a retry that cannot be made as asked (a running run, an
// unknown step): the caller's mistake, not the server's.
type retryError struct{ msg string }

func (e *retryError) Error() string { return e.msg }

// submitError is a retry the server did not start (an ID in use, no server).
type submitError struct {
	id  string
	err error
}

func (e *submitError) Error() string { return fmt.Sprintf("cannot start %s: %v", e.id, e.err) }

func (e *submitError) Unwrap() error { return e.err }

// startRetry starts a new run of a finished run's frozen playbook, reusing
// the steps that completed; with step, that step and everything downstream
// of it run again. by and reason say who asked and why: the new run records
// them (its events, its aggregate, the Web UI's details).
func startRetry(ctx context.Context, conn *connection, earlierID, step, id, taskQueue, by, reason string) (*retried, error) {
	in, err := frozenInput(ctx, conn.client, earlierID)
	if err != nil {
		return nil, err
	}
	d, err := conn.client.DescribeWorkflowExecution(ctx, earlierID, "")
	if err != nil {
		return nil, err
	}
	if d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return nil, &retryError{fmt.Sprintf("%s is still running; retry a finished run", earlierID)}
	}
	earlier, err := result(ctx, conn.client.GetWorkflow(ctx, earlierID, ""))
	if err != nil {
		return nil, err
	}
	pb, err := spec.Parse(in.File, []byte(in.Source))
	if err != nil {
		return nil, fmt.Errorf("the frozen playbook no longer parses: %w", err)
	}
	// A retry is a submission: today's checks apply to the frozen
	// playbook and workload (its files are not read again).
	if _, err := submit.ParseStrict(in.File, []byte(in.Source), ""); err != nil {
		return nil, &retryError{err.Error()}
	}
	if in.Workload, err = submit.CheckOverrides(pb, in.Workload); err != nil {
		return nil, &retryError{err.Error()}
	}
	if in.Reuse, err = engine.ReusableSteps(pb, contract.Reusable(earlier), step); err != nil {
		return nil, &retryError{err.Error()}
	}
	if id == "" {
		id = pb.Name + "-" + randomSuffix()
	}
	in.Origin = &contract.Origin{RetryOf: earlierID, From: step, By: by, Reason: reason}
	if err := conn.checkCodec(ctx, taskQueue); err != nil {
		return nil, &retryError{err.(*exitError).err.Error()}
	}
	wr, err := conn.submitWith(ctx, pb, in, id, taskQueue, in.Origin.String())
	if err != nil {
		return nil, &submitError{id: id, err: err}
	}
	r := &retried{pb: pb, run: wr}
	for _, s := range pb.Steps {
		if in.Reuse[s.Name] != nil {
			r.reused = append(r.reused, s.Name)
		}
	}
	return r, nil
}
