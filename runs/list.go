package runs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"playbook/interpreter/contract"
)

// Run is one run as a list shows it (`playbook list`, list_runs).
type Run struct {
	WorkflowID  string   `json:"workflow_id"`
	RunID       string   `json:"run_id"`
	Playbook    string   `json:"playbook"`
	Status      string   `json:"status"`
	FailedSteps []string `json:"failed_steps"`
	// WarningSteps failed with allow_failure.
	WarningSteps []string `json:"warning_steps,omitempty"`
	// DeadlinePassed: the run's own deadline (its timeout) passed.
	DeadlinePassed bool      `json:"deadline_passed,omitempty"`
	Start          time.Time `json:"start_time"`
	// Schedule is the ID of the schedule that started the run, if one did.
	Schedule string `json:"schedule,omitempty"`
}

// Filter keeps the runs a list shows; its zero value keeps every run.
// `playbook list` and the MCP server's list_runs both build one, and
// Query is the one place a visibility query is written.
type Filter struct {
	// Status is one of ListStatuses ("" any).
	Status string
	// Playbook is the playbook's name ("" any).
	Playbook string
	// Schedule is the ID of the schedule that started the runs ("" any).
	Schedule string
	// Since keeps the runs started at or after it (zero: any).
	Since time.Time
}

// Query is the filter as a visibility query over playbook's runs; an
// error names a status that is none of ListStatuses.
func (f Filter) Query() (string, error) {
	where, err := statusQuery(f.Status)
	if err != nil {
		return "", err
	}
	query := fmt.Sprintf("WorkflowType = '%s'", contract.WorkflowName) + where
	if f.Playbook != "" {
		query += fmt.Sprintf(" AND %s = '%s'", contract.AttrPlaybookName, quoteQuery(f.Playbook))
	}
	if f.Schedule != "" {
		query += fmt.Sprintf(" AND %s = '%s'", scheduledByID, quoteQuery(f.Schedule))
	}
	if !f.Since.IsZero() {
		query += fmt.Sprintf(" AND StartTime >= '%s'", f.Since.UTC().Format(time.RFC3339))
	}
	return query, nil
}

// List lists the runs f keeps, newest first: at most limit of them, all
// of them when limit is negative. A namespace without playbook's search
// attributes cannot answer: a NotIndexedError.
func List(ctx context.Context, c Client, namespace string, f Filter, limit int) ([]Run, error) {
	query, err := f.Query()
	if err != nil {
		return nil, err
	}
	infos, err := Executions(ctx, c, namespace, query, limit)
	if err != nil {
		var noNamespace *serviceerror.NamespaceNotFound
		if errors.As(err, &noNamespace) {
			return nil, err // not one to set up: a namespace mistyped
		}
		if !Indexed(ctx, c, namespace) {
			return nil, &NotIndexedError{}
		}
		return nil, err
	}
	runs := make([]Run, len(infos))
	for i, e := range infos {
		runs[i] = RunOf(e)
	}
	return runs, nil
}

// Executions lists the executions query matches, newest first, page by
// page: at most limit of them, all of them when limit is negative.
func Executions(ctx context.Context, c Client, namespace, query string, limit int) ([]*workflowpb.WorkflowExecutionInfo, error) {
	var infos []*workflowpb.WorkflowExecutionInfo
	var token []byte
	for limit < 0 || len(infos) < limit {
		size := 1000
		if limit >= 0 {
			size = min(limit, size)
		}
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: namespace, Query: query, NextPageToken: token, PageSize: int32(size)})
		if err != nil {
			return nil, err
		}
		infos = append(infos, resp.GetExecutions()...)
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	if limit >= 0 && len(infos) > limit {
		infos = infos[:limit]
	}
	return infos, nil
}

// Indexed tells whether the namespace has playbook's search attributes.
func Indexed(ctx context.Context, c Client, namespace string) bool {
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return false
	}
	for name := range contract.SearchAttributes {
		if _, ok := resp.GetCustomAttributes()[name]; !ok {
			return false
		}
	}
	return true
}

// ListStatuses are the statuses a list filters by: a run's own, and those
// Temporal gives a run it ended itself.
var ListStatuses = []string{contract.RunRunning, contract.RunWaiting, contract.RunQueued, contract.RunCompleted, contract.RunCompletedWithWarnings, contract.RunFailed, contract.RunCancelled, RunTerminated, RunTimedOut}

// The statuses of a run Temporal ended without its end step: the run
// could not record them in its PlaybookStatus, which stays "running".
const (
	RunTerminated = "terminated"
	RunTimedOut   = "timed_out"
)

// statusQuery is the part of a list query that keeps the runs in status
// ("" all of them). A run's PlaybookStatus is what the run last recorded;
// a run Temporal terminated or timed out could not record it, so its
// ExecutionStatus decides: running means both say so. timed_out is also a
// run failed by its own deadline (which is failed as well).
func statusQuery(status string) (string, error) {
	attr := contract.AttrPlaybookStatus
	switch status {
	case "":
		return "", nil
	case contract.RunRunning, contract.RunWaiting, contract.RunQueued:
		return fmt.Sprintf(" AND %s = '%s' AND ExecutionStatus = 'Running'", attr, status), nil
	case RunTerminated:
		return " AND ExecutionStatus = 'Terminated'", nil
	case RunTimedOut:
		// Temporal's execution timeout, or the run's own deadline that
		// failed it.
		return fmt.Sprintf(" AND (ExecutionStatus = 'TimedOut' OR (%s = '%s' AND %s = '%s'))",
			contract.AttrFailedSteps, contract.DeadlineMark, attr, contract.RunFailed), nil
	case contract.RunCompleted, contract.RunCompletedWithWarnings, contract.RunFailed, contract.RunCancelled:
		return fmt.Sprintf(" AND %s = '%s'", attr, status), nil
	}
	return "", fmt.Errorf("--status %q is not a run status (%s)", status, strings.Join(ListStatuses, ", "))
}

// endedSinceQuery keeps the runs of playbook that ended at since or later
// (an after trigger's watch).
func endedSinceQuery(playbook string, since time.Time) string {
	return fmt.Sprintf("WorkflowType = '%s' AND %s = '%s' AND ExecutionStatus != 'Running' AND CloseTime >= '%s'",
		contract.WorkflowName, contract.AttrPlaybookName, quoteQuery(playbook), since.UTC().Format(time.RFC3339Nano))
}

// scheduledByID is the search attribute Temporal sets on a run a schedule started.
const scheduledByID = "TemporalScheduledById"

// quoteQuery escapes s for a single-quoted string of a visibility query:
// a backslash escapes a quote and itself.
func quoteQuery(s string) string {
	return strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s)
}

// TemporalStatus is a run's status as Temporal gives it, in lower case
// with words joined by _ as `list --status` takes them: running,
// completed, terminated, timed_out, continued_as_new...
func TemporalStatus(e *workflowpb.WorkflowExecutionInfo) string {
	// The enum's String is TimedOut, ContinuedAsNew: its words are split
	// at each capital.
	var b strings.Builder
	for i, r := range strings.TrimPrefix(e.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_") {
		if i > 0 && unicode.IsUpper(r) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// RunOf is a listed execution as a Run: its search attributes read.
func RunOf(e *workflowpb.WorkflowExecutionInfo) Run {
	r := Run{WorkflowID: e.GetExecution().GetWorkflowId(), RunID: e.GetExecution().GetRunId(), Start: e.GetStartTime().AsTime(), FailedSteps: []string{}}
	fields := e.GetSearchAttributes().GetIndexedFields()
	dc := converter.GetDefaultDataConverter()
	if p := fields[contract.AttrPlaybookName]; p != nil {
		_ = dc.FromPayload(p, &r.Playbook)
	}
	if p := fields[contract.AttrPlaybookStatus]; p != nil {
		_ = dc.FromPayload(p, &r.Status)
	}
	if p := fields[contract.AttrFailedSteps]; p != nil {
		var indexed []string
		_ = dc.FromPayload(p, &indexed)
		for _, s := range indexed {
			if s == contract.DeadlineMark {
				r.DeadlinePassed = true
			} else if name, ok := strings.CutSuffix(s, contract.WarningMark); ok {
				r.WarningSteps = append(r.WarningSteps, name)
			} else {
				r.FailedSteps = append(r.FailedSteps, s)
			}
		}
	}
	if p := fields[scheduledByID]; p != nil {
		_ = dc.FromPayload(p, &r.Schedule)
	}
	switch e.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED,
		enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		if r.Status == "" {
			r.Status = TemporalStatus(e)
		}
	default:
		// Terminated or timed out: the run could not say so itself.
		r.Status = TemporalStatus(e)
	}
	return r
}

// WorkflowTypes are the workflow types of playbook's executions: a run, a
// loop's driver, a batch of loop elements, a concurrency key's coordinator,
// a trigger's registration (long-lived, on the workers like the others).
var WorkflowTypes = []string{contract.WorkflowName, contract.LoopWorkflowName, contract.LoopBatchWorkflowName, contract.CoordinatorWorkflowName, contract.TriggerWorkflowName}

// Replayable lists the namespace's open executions of WorkflowTypes, then
// the last closed ones (at most closed of them), newest first: what a
// worker about to be upgraded must still replay.
func Replayable(ctx context.Context, c Client, namespace string, closed int) ([]*workflowpb.WorkflowExecutionInfo, error) {
	types := "WorkflowType IN ('" + strings.Join(WorkflowTypes, "', '") + "')"
	open, err := Executions(ctx, c, namespace, types+" AND ExecutionStatus = 'Running'", -1)
	if err != nil || closed <= 0 {
		return open, err
	}
	ended, err := Executions(ctx, c, namespace, types+" AND ExecutionStatus != 'Running'", closed)
	if err != nil {
		return nil, err
	}
	return append(open, ended...), nil
}
