package runs

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
)

const threeSteps = `metadata: { name: three }
workflow:
  - step: a
    tool: { kind: shell, command: "true" }
    retry: { max_attempts: 4 }
    next: b
  - step: b
    tool: { kind: noop }
    next: c
  - step: c
    tool: { kind: noop }
`

var frozen = &contract.Input{File: "three.yaml", Source: threeSteps}

func agg(status string, steps ...string) contract.Aggregate {
	a := contract.Aggregate{Playbook: "three", Status: status, TotalSteps: 3, FailedSteps: []string{}, Steps: map[string]*contract.StepState{}}
	for _, s := range steps {
		a.Steps[s] = &contract.StepState{Status: contract.StatusCompleted, Attempts: 1}
	}
	return a
}

func answers(a contract.Aggregate) map[string]func(...any) (any, error) {
	return map[string]func(...any) (any, error){contract.QueryState: func(...any) (any, error) { return a, nil }}
}

var errNotInHistory = errors.New("the history was read")

// An open run answers a query; the server's pending activities add their
// retry state, bounded by what the frozen playbook configures. Its
// history's result is never waited on.
func TestStatusOfAnOpenRunAsksTheRun(t *testing.T) {
	running := agg(contract.RunRunning, "b")
	running.Steps["a"] = &contract.StepState{Status: contract.StatusRunning, Attempts: 2}
	f := &fakeClient{runs: map[string]*fakeRun{"r1": {
		status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, input: frozen, queries: answers(running), resultErr: errNotInHistory,
		pending: []*workflowpb.PendingActivityInfo{{ActivityId: "a", Attempt: 2, MaximumAttempts: 9, State: enumspb.PENDING_ACTIVITY_STATE_SCHEDULED}},
	}}}
	st, err := StatusOf(context.Background(), f, "r1")
	require.NoError(t, err)
	require.Equal(t, contract.RunRunning, st.Status)
	require.Equal(t, "r1", st.WorkflowID)
	require.Equal(t, "r1-run", st.RunID)
	require.Equal(t, Live{Attempt: 2, MaximumAttempts: 4, State: "Scheduled"}, st.Live["a"], "the playbook's max_attempts, not the server's")
	require.False(t, st.EndedByTemporal())
	require.Equal(t, "three", st.Playbook().Name)
	require.Equal(t, []string{contract.QueryState}, f.queried)
}

// A run that has ended is read from its history, with no worker: a
// completed run's result, a failed one's failure details, a cancelled
// one's cancellation details.
func TestStatusOfAnEndedRunReadsItsHistory(t *testing.T) {
	done, failed, cancelled := agg(contract.RunCompleted, "a", "b", "c"), agg(contract.RunFailed, "a"), agg(contract.RunCancelled, "a")
	failed.FailedSteps = []string{"b"}
	for _, c := range []struct {
		status enumspb.WorkflowExecutionStatus
		run    fakeRun
		want   contract.Aggregate
	}{
		{enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, fakeRun{result: done}, done},
		{enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, fakeRun{resultErr: temporal.NewApplicationError("failed", contract.FailedErrorType, failed)}, failed},
		{enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, fakeRun{resultErr: temporal.NewCanceledError(cancelled)}, cancelled},
	} {
		t.Run(c.status.String(), func(t *testing.T) {
			r := c.run
			r.status, r.input = c.status, frozen
			f := &fakeClient{runs: map[string]*fakeRun{"r1": &r}}
			st, err := StatusOf(context.Background(), f, "r1")
			require.NoError(t, err)
			require.Empty(t, f.queried, "an ended run needs no worker")
			want := c.want
			want.WorkflowID, want.RunID = "r1", "r1-run"
			require.Equal(t, want, *st.Aggregate)
		})
	}
}

// A run Temporal ended by itself (terminated, timed out) has no aggregate:
// its status is Temporal's; its steps are asked of a worker only when one
// polls its task queue.
func TestStatusOfARunTemporalEnded(t *testing.T) {
	running := agg(contract.RunRunning, "a")
	for _, pollers := range []int{0, 1} {
		f := &fakeClient{pollers: pollers, runs: map[string]*fakeRun{"r1": {
			status: enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, input: frozen, queries: answers(running), resultErr: errNotInHistory,
		}}}
		st, err := StatusOf(context.Background(), f, "r1")
		require.NoError(t, err)
		require.True(t, st.EndedByTemporal())
		require.Equal(t, RunTerminated, st.Status)
		require.Equal(t, "three", st.Aggregate.Playbook)
		if pollers == 0 {
			require.Empty(t, f.queried, "no worker polls: nobody to ask")
			require.Empty(t, st.Steps)
		} else {
			require.Equal(t, running.Steps, st.Steps)
		}
	}
}

func TestStatusOfAMissingRunIsNotFound(t *testing.T) {
	_, err := StatusOf(context.Background(), &fakeClient{}, "nope")
	var nf *NotFoundError
	require.ErrorAs(t, err, &nf)
	require.Equal(t, "nope", nf.Run)
	require.Equal(t, "workflow not found for ID: nope", err.Error(), "the server's words, unchanged")
}

// The one visibility-query builder: every status the list takes, quoting,
// and the filters the CLI and the MCP server give.
func TestFilterQuery(t *testing.T) {
	base := "WorkflowType = 'Playbook'"
	since := time.Date(2026, 1, 2, 15, 4, 5, 0, time.FixedZone("x", 3600))
	for _, c := range []struct {
		f    Filter
		want string
	}{
		{Filter{}, base},
		{Filter{Status: "running"}, base + " AND PlaybookStatus = 'running' AND ExecutionStatus = 'Running'"},
		{Filter{Status: "waiting"}, base + " AND PlaybookStatus = 'waiting' AND ExecutionStatus = 'Running'"},
		{Filter{Status: "queued"}, base + " AND PlaybookStatus = 'queued' AND ExecutionStatus = 'Running'"},
		{Filter{Status: "completed"}, base + " AND PlaybookStatus = 'completed'"},
		{Filter{Status: "completed_with_warnings"}, base + " AND PlaybookStatus = 'completed_with_warnings'"},
		{Filter{Status: "failed"}, base + " AND PlaybookStatus = 'failed'"},
		{Filter{Status: "cancelled"}, base + " AND PlaybookStatus = 'cancelled'"},
		{Filter{Status: "terminated"}, base + " AND ExecutionStatus = 'Terminated'"},
		{Filter{Status: "timed_out"}, base + " AND (ExecutionStatus = 'TimedOut' OR (FailedSteps = '(deadline)' AND PlaybookStatus = 'failed'))"},
		{Filter{Playbook: `it's a \ name`}, base + ` AND PlaybookName = 'it\'s a \\ name'`},
		{Filter{Schedule: "nightly"}, base + " AND TemporalScheduledById = 'nightly'"},
		{Filter{Since: since}, base + " AND StartTime >= '2026-01-02T14:04:05Z'"},
		{Filter{Status: "failed", Playbook: "etl", Schedule: "s", Since: since},
			base + " AND PlaybookStatus = 'failed' AND PlaybookName = 'etl' AND TemporalScheduledById = 's' AND StartTime >= '2026-01-02T14:04:05Z'"},
	} {
		got, err := c.f.Query()
		require.NoError(t, err, "%+v", c.f)
		require.Equal(t, c.want, got)
	}
	for _, s := range ListStatuses {
		_, err := Filter{Status: s}.Query()
		require.NoError(t, err, s)
	}
	_, err := Filter{Status: "done"}.Query()
	require.EqualError(t, err, `--status "done" is not a run status (running, waiting, queued, completed, completed_with_warnings, failed, cancelled, terminated, timed_out)`)
}

func execution(id string, attrs map[string]any) *workflowpb.WorkflowExecutionInfo {
	fields := map[string]*commonpb.Payload{}
	for k, v := range attrs {
		p, _ := converter.GetDefaultDataConverter().ToPayload(v)
		fields[k] = p
	}
	return &workflowpb.WorkflowExecutionInfo{Execution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: id + "-run"}, Status: enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED,
		StartTime: timestamppb.New(time.Unix(1000, 0)), SearchAttributes: &commonpb.SearchAttributes{IndexedFields: fields}}
}

// A list asks page by page: at most limit runs, every run when limit is
// negative.
func TestListPagesUpToItsLimit(t *testing.T) {
	f := &fakeClient{attrs: SearchAttributes()}
	for i := range 2500 {
		f.listed = append(f.listed, execution(fmt.Sprint("r", i), nil))
	}
	all, err := List(context.Background(), f, "ns", Filter{Playbook: "x"}, -1)
	require.NoError(t, err)
	require.Len(t, all, 2500)
	require.Equal(t, []int32{1000, 1000, 1000}, f.pageAsks)
	require.Equal(t, "WorkflowType = 'Playbook' AND PlaybookName = 'x'", f.queries[0])
	f.pageAsks = nil
	five, err := List(context.Background(), f, "ns", Filter{}, 5)
	require.NoError(t, err)
	require.Len(t, five, 5)
	require.Equal(t, []int32{5}, f.pageAsks)
	_, err = List(context.Background(), f, "ns", Filter{Status: "done"}, 5)
	require.Error(t, err)
}

// A namespace without playbook's search attributes cannot list runs: the
// error says what to do; with them, the server's error stands.
func TestListWithoutSearchAttributesIsNotIndexed(t *testing.T) {
	failing := errors.New("invalid query")
	f := &fakeClient{listErr: failing}
	_, err := List(context.Background(), f, "ns", Filter{}, 10)
	var ni *NotIndexedError
	require.ErrorAs(t, err, &ni)
	require.EqualError(t, err, "this namespace lacks playbook's search attributes; run `playbook setup` once")
	f.attrs = SearchAttributes()
	_, err = List(context.Background(), f, "ns", Filter{}, 10)
	require.ErrorIs(t, err, failing)
}

// A listed run's search attributes: its failed steps apart from the ones
// allowed to fail and the deadline mark; a run Temporal ended shows
// Temporal's status whatever it last recorded.
func TestRunOfReadsTheSearchAttributes(t *testing.T) {
	e := execution("r1", map[string]any{contract.AttrPlaybookName: "etl", contract.AttrPlaybookStatus: contract.RunFailed,
		contract.AttrFailedSteps: []string{"load", "check" + contract.WarningMark, contract.DeadlineMark}, scheduledByID: "nightly"})
	require.Equal(t, Run{WorkflowID: "r1", RunID: "r1-run", Playbook: "etl", Status: contract.RunFailed, FailedSteps: []string{"load"},
		WarningSteps: []string{"check"}, DeadlinePassed: true, Start: time.Unix(1000, 0).UTC(), Schedule: "nightly"}, RunOf(e))
	e = execution("r2", map[string]any{contract.AttrPlaybookStatus: contract.RunRunning})
	e.Status = enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED
	require.Equal(t, RunTerminated, RunOf(e).Status)
	require.Equal(t, []string{}, RunOf(e).FailedSteps)
}

// Events come in pages, each asked after the last event of the one
// before, until an empty page.
func TestEventsAskPageAfterPage(t *testing.T) {
	var asked [][]any
	events := func(args ...any) (any, error) {
		asked = append(asked, args)
		after := args[0].(int)
		var page []engine.Event
		for seq := after + 1; seq <= min(after+2, 5); seq++ {
			page = append(page, engine.Event{Seq: seq, Type: "step_started"})
		}
		return page, nil
	}
	f := &fakeClient{runs: map[string]*fakeRun{"r1": {queries: map[string]func(...any) (any, error){contract.QueryEvents: events}}}}
	evs, err := Events(context.Background(), f, "r1", "", 1, 0)
	require.NoError(t, err)
	require.Len(t, evs, 4)
	require.Equal(t, 5, evs[3].Seq)
	require.Equal(t, [][]any{{1, contract.EventsPage, contract.EventsPageBytes}, {3, contract.EventsPage, contract.EventsPageBytes},
		{5, contract.EventsPage, contract.EventsPageBytes}}, asked)
	_, err = Events(context.Background(), f, "gone", "", 0, 0)
	var nf *NotFoundError
	require.ErrorAs(t, err, &nf)
}

// A page the server gave up on (its deadline, which may come before the
// client's) is asked again when nothing bounds the question, up to
// slowAsks times; while following, it is the events so far and no error.
func TestEventsAskAgainWhatTheServerGaveUpOn(t *testing.T) {
	fails := 0 // the asks of each page that time out first
	asks := 0
	events := func(args ...any) (any, error) {
		asks++
		if asks <= fails {
			return nil, serviceerror.NewDeadlineExceeded("context deadline exceeded")
		}
		asks = 0
		after := args[0].(int)
		if after >= 3 {
			return []engine.Event{}, nil
		}
		return []engine.Event{{Seq: after + 1, Type: "step_started"}}, nil
	}
	f := &fakeClient{runs: map[string]*fakeRun{"r1": {queries: map[string]func(...any) (any, error){contract.QueryEvents: events}}}}
	fails = slowAsks - 1
	evs, err := Events(context.Background(), f, "r1", "", 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 3, "every page, each asked again")

	fails = slowAsks
	_, err = Events(context.Background(), f, "r1", "", 0, 0)
	var deadline *serviceerror.DeadlineExceeded
	require.ErrorAs(t, err, &deadline, "asked slowAsks times, the server's answer stands")

	asks, fails = 0, 1
	evs, err = Events(context.Background(), f, "r1", "", 0, time.Minute)
	require.NoError(t, err, "following, a page the server gave up on is asked on the next tick")
	require.Empty(t, evs)
}

// Cancelling a run that has ended is refused, saying how it ended: the
// CLI exits 5 with it, the MCP server answers it.
func TestRefuseEndedSaysHowTheRunEnded(t *testing.T) {
	failed := agg(contract.RunFailed, "a")
	failed.FailedStepsCount, failed.FailedSteps, failed.WarningSteps = 1, []string{"b"}, []string{"c"}
	f := &fakeClient{runs: map[string]*fakeRun{
		"open":   {status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING},
		"failed": {status: enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, resultErr: temporal.NewApplicationError("failed", contract.FailedErrorType, failed)},
		"killed": {status: enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, resultErr: errors.New("terminated")},
	}}
	require.NoError(t, RefuseEnded(context.Background(), f, "open"))
	require.NoError(t, RefuseEnded(context.Background(), f, "unknown"), "the cancel itself then reports the server's error")
	err := RefuseEnded(context.Background(), f, "failed")
	var ended *EndedError
	require.ErrorAs(t, err, &ended)
	require.EqualError(t, err, "failed already ended: failed, 1 of 3 steps failed (b); 1 allowed to fail (c); nothing to cancel")
	require.EqualError(t, RefuseEnded(context.Background(), f, "killed"), "killed already ended: terminated; nothing to cancel")
}

// The frozen input is the first event's; a run that is not a playbook's
// says so.
func TestFrozenInputReadsTheFirstEvent(t *testing.T) {
	f := &fakeClient{runs: map[string]*fakeRun{"r1": {input: &contract.Input{File: "three.yaml", Source: threeSteps, Index: true}}}}
	in, err := FrozenInput(context.Background(), f, "r1")
	require.NoError(t, err)
	require.Equal(t, contract.Input{File: "three.yaml", Source: threeSteps}, in, "Index is the submitter's, not carried over")
	_, err = FrozenInput(context.Background(), f, "r2")
	var nf *NotFoundError
	require.ErrorAs(t, err, &nf)
}

// What the run refuses is a RefusedError in the run's own words (the CLI
// exits 2 with it); its answer otherwise is the Update's.
func TestDecisionsTheRunRefuses(t *testing.T) {
	var sent []any
	f := &fakeClient{runs: map[string]*fakeRun{"r1": {
		status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
		updates: map[string]func(...any) (string, error){
			contract.UpdateClassify: func(args ...any) (string, error) {
				sent = args
				if args[0] != "load" {
					return "", temporal.NewApplicationError(fmt.Sprintf("step %q is not pending_failed", args[0]), "refused")
				}
				return "load: skip", nil
			},
			contract.UpdateApproval: func(args ...any) (string, error) {
				return "gate: " + args[0].(contract.ApprovalDecision).Decision, nil
			},
		},
		queries: map[string]func(...any) (any, error){contract.QueryApprovals: func(...any) (any, error) {
			return []engine.WaitingApproval{{Step: "gate"}}, nil
		}},
	}}}
	ctx := context.Background()
	answer, err := Classify(ctx, f, "r1", "load", "skip", "why", "ann", `{"rows": 0}`)
	require.NoError(t, err)
	require.Equal(t, "load: skip", answer)
	require.Equal(t, []any{"load", "skip", "why", "ann", `{"rows": 0}`}, sent)
	_, err = Classify(ctx, f, "r1", "x", "retry", "", "ann", "")
	require.Equal(t, []any{"x", "retry", "", "ann"}, sent, "no result: four arguments, as older workers take")
	var refused *RefusedError
	require.ErrorAs(t, err, &refused)
	require.EqualError(t, err, `step "x" is not pending_failed`)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app, "the MCP server reads the run's error through it")

	w, err := WaitingApproval(ctx, f, "r1", "gate")
	require.NoError(t, err)
	require.Equal(t, "gate", w.Step)
	_, err = WaitingApproval(ctx, f, "r1", "other")
	require.ErrorAs(t, err, &refused)
	require.EqualError(t, err, `step "other" of run r1 is not waiting for approval`)
	answer, err = DecideApproval(ctx, f, "r1", contract.ApprovalDecision{Step: "gate", Decision: contract.DecisionApprove})
	require.NoError(t, err)
	require.Equal(t, "gate: approve", answer)
	_, err = Classify(ctx, f, "gone", "x", "retry", "", "", "")
	var nf *NotFoundError
	require.ErrorAs(t, err, &nf)
}

// A cancel's reason goes first as the cancel_reason signal (the run
// records it), then with the cancel request; a run that has ended is
// refused and nothing is sent. A drain is a signal, refused alike.
func TestCancelAndDrainSendTheReasonOrRefuse(t *testing.T) {
	newClient := func() *fakeClient {
		return &fakeClient{runs: map[string]*fakeRun{
			"open":  {status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING},
			"ended": {status: enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, result: agg(contract.RunCompleted, "a", "b", "c")},
		}}
	}
	ctx := context.Background()
	f := newClient()
	require.NoError(t, Cancel(ctx, f, "ns", "open", "wrong data"))
	require.Equal(t, []sent{{"signal " + contract.SignalCancelReason, "open", "wrong data"}, {"cancel in ns", "open", "wrong data"}}, f.sent)
	f = newClient()
	require.NoError(t, Cancel(ctx, f, "ns", "open", ""))
	require.Equal(t, []sent{{"cancel", "open", ""}}, f.sent)
	f = newClient()
	require.NoError(t, Drain(ctx, f, "open", "deploy"))
	require.Equal(t, []sent{{"signal " + contract.SignalDrain, "open", "deploy"}}, f.sent)

	f = newClient()
	var ended *EndedError
	require.ErrorAs(t, Cancel(ctx, f, "ns", "ended", "why"), &ended)
	require.ErrorAs(t, Drain(ctx, f, "ended", "why"), &ended)
	require.EqualError(t, ended, "ended already ended: completed, 0 of 3 steps failed; nothing to cancel")
	require.Empty(t, f.sent)
	var nf *NotFoundError
	require.ErrorAs(t, Cancel(ctx, f, "ns", "gone", ""), &nf)
}

// A status Temporal gives is written as `list --status` takes it: a run
// Temporal timed out is timed_out, not timedout.
func TestTemporalStatusIsWrittenAsListTakesIt(t *testing.T) {
	for status, want := range map[enumspb.WorkflowExecutionStatus]string{
		enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:          "running",
		enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:       RunTerminated,
		enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:        RunTimedOut,
		enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW: "continued_as_new",
	} {
		require.Equal(t, want, TemporalStatus(&workflowpb.WorkflowExecutionInfo{Status: status}))
	}
}

// status of an execution that is not a playbook run (a trigger's
// registration, say) says what it is, rather than the SDK's word on a
// query it does not know.
func TestStatusOfAnotherWorkflowSaysWhatItIs(t *testing.T) {
	f := &fakeClient{runs: map[string]*fakeRun{"playbook-hook-h": {status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, workflowType: contract.TriggerWorkflowName}}}
	_, err := StatusOf(context.Background(), f, "playbook-hook-h")
	var invalid *InvalidError
	require.ErrorAs(t, err, &invalid)
	require.EqualError(t, err, "playbook-hook-h is not a playbook run: its workflow type is PlaybookTrigger (a trigger's registration, which `playbook schedule apply` keeps: `playbook list` shows the runs it starts)")
	require.Empty(t, f.queried)
}
