package runs

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
)

// writePlaybook writes a playbook file in a directory of its own.
func writePlaybook(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

const looping = `metadata: { name: looping }
workflow:
  - step: a
    tool: { kind: shell, command: "true" }
    next: each
  - step: each
    loop: { in: [10, 20, 30, 40] }
    tool: { kind: shell, command: "echo $ITEM", env: { ITEM: "{{ item }}" } }
    next: c
  - step: c
    tool: { kind: noop }
`

// elementEvents are a history's events for loop elements of step that
// completed: each scheduled with its item's digest, and its result.
func elementEvents(t *testing.T, step string, items ...int) []*historypb.HistoryEvent {
	t.Helper()
	dc := converter.GetDefaultDataConverter()
	var events []*historypb.HistoryEvent
	for i, item := range items {
		in, err := dc.ToPayload(contract.StepInput{ItemSHA256: contract.ItemDigest(item)})
		require.NoError(t, err)
		out, err := dc.ToPayload(contract.StepOutput{Result: map[string]any{"stdout": item}})
		require.NoError(t, err)
		id := int64(10 + 2*i)
		events = append(events, &historypb.HistoryEvent{EventId: id, EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
			Attributes: &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{
				ActivityId: step + "[" + string(rune('0'+i)) + "]", ActivityType: &commonpb.ActivityType{Name: contract.RunStepName},
				Input: &commonpb.Payloads{Payloads: []*commonpb.Payload{in}}}}},
			&historypb.HistoryEvent{EventId: id + 1, EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
				Attributes: &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{
					ScheduledEventId: id, Result: &commonpb.Payloads{Payloads: []*commonpb.Payload{out}}}}})
	}
	return events
}

// A retry of its frozen playbook reuses a completed step, and of a loop
// that failed part-way the elements that completed: the first two, one
// span, with their results; the rest run, and so does what follows.
func TestRetryPlanReusesAStepAndALoopsCompletedElements(t *testing.T) {
	ctx := context.Background()
	path := writePlaybook(t, "looping.yaml", looping)
	_, in, err := Load(path)
	require.NoError(t, err)
	earlier := contract.Aggregate{Playbook: "looping", Status: contract.RunFailed, TotalSteps: 3, FailedSteps: []string{"each"}, Steps: map[string]*contract.StepState{
		"a":    {Status: contract.StatusCompleted, Attempts: 1, Result: map[string]any{"stdout": ""}},
		"each": {Status: contract.StatusFailed, Attempts: 1},
		"c":    {Status: contract.StatusSkipped},
	}}
	f := &fakeClient{runs: map[string]*fakeRun{"r1": {status: enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, input: &in, result: earlier,
		events: elementEvents(t, "each", 10, 20)}}}

	r, err := Retry(ctx, f, "ns", RetryRequest{Run: "r1", ID: "r2", TaskQueue: "q", By: "ann", Reason: "the disk is back"})
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, r.Reused)
	decided := map[string]engine.ReuseDecision{}
	for _, d := range r.Plan.Decisions {
		decided[d.Step] = d
	}
	require.True(t, decided["a"].Reused)
	require.Equal(t, &engine.ElementCounts{Total: 4, Run: 2, Reused: 2}, decided["each"].Elements)
	require.False(t, decided["c"].Reused)
	require.NotEmpty(t, decided["c"].Why)

	require.Len(t, f.started, 1)
	got := f.started[0]
	require.Equal(t, "r2", got.opts.ID)
	require.Contains(t, got.input.Reuse, "a")
	elements := got.input.ReuseElements["each"]
	require.NotNil(t, elements)
	require.Equal(t, 4, elements.Total)
	require.Equal(t, contract.SpansOf([]bool{true, true, false, false}), elements.Spans)
	require.Len(t, elements.Results, 2)
	require.Equal(t, &contract.Origin{RetryOf: "r1", By: "ann", Reason: "the disk is back"}, got.input.Origin)
	require.Equal(t, got.input.Origin.String(), got.opts.StaticDetails)

	data := r.PlanData("r1")
	require.Equal(t, "r1", data["retry_of"])
	require.Equal(t, []string{"a"}, data["reused"])
	require.Equal(t, []string{}, data["warnings"], "none: a list, not null")
}

// A retry with a fixed playbook runs the step whose definition changed,
// saying why, and what is downstream of it; a dry run starts nothing. A
// running run, or a front end's check that fails, is the caller's mistake.
func TestRetryPlanRunsAChangedStepAndSaysWhy(t *testing.T) {
	ctx := context.Background()
	_, in, err := Load(writePlaybook(t, "three.yaml", threeSteps))
	require.NoError(t, err)
	f := &fakeClient{runs: map[string]*fakeRun{
		"r1":      {status: enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, input: &in, result: agg(contract.RunCompleted, "a", "b", "c")},
		"running": {status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, input: &in},
	}}
	fixed := `metadata: { name: three }
workflow:
  - step: a
    tool: { kind: shell, command: "true" }
    retry: { max_attempts: 4 }
    next: b
  - step: b
    tool: { kind: shell, command: "echo fixed" }
    next: c
  - step: c
    tool: { kind: noop }
`
	pb, newIn, err := Load(writePlaybook(t, "three.yaml", fixed))
	require.NoError(t, err)
	r, err := Retry(ctx, f, "ns", RetryRequest{Run: "r1", Playbook: pb, Input: &newIn, File: "three.yaml", DryRun: true})
	require.NoError(t, err)
	require.Nil(t, r.Run)
	require.Empty(t, f.started, "a dry run starts nothing")
	require.Equal(t, []string{"a"}, r.Reused)
	whys := map[string]string{}
	for _, d := range r.Plan.Decisions {
		whys[d.Step] = d.Why
	}
	require.Equal(t, map[string]string{"a": "", "b": "tool.command changed", "c": "upstream b runs again", "end": "the end step always runs"}, whys)

	_, err = Retry(ctx, f, "ns", RetryRequest{Run: "running"})
	var mistake *InvalidError
	require.ErrorAs(t, err, &mistake)
	require.EqualError(t, err, "running is still running; retry a finished run")

	refuse := func(context.Context, string) error { return errFakeCheck }
	_, err = Retry(ctx, f, "ns", RetryRequest{Run: "r1", TaskQueue: "q", Check: refuse})
	require.ErrorAs(t, err, &mistake)
	require.ErrorIs(t, err, errFakeCheck)
	require.Empty(t, f.started, "a failed check starts nothing")

	_, err = Retry(ctx, f, "ns", RetryRequest{Run: "gone"})
	var nf *NotFoundError
	require.ErrorAs(t, err, &nf)
}
