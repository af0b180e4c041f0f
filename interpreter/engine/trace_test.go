package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// Spans are the run's span and one per step that started, under it, with
// the step's workflow times, what the step table says of it as
// attributes, and a failed status where the step failed (not where it
// was allowed to).
func TestRunSpansAreTheStepTable(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: spans}
failure_mode: continue
workflow:
  - {step: a, tool: {kind: shell, command: "true"}, next: b}
  - {step: b, tool: {kind: shell, command: "exit 3"}, next: c}
  - {step: c, tool: {kind: noop}}
  - {step: d, allow_failure: true, tool: {kind: http, url: "http://x"}}
`))
	require.NoError(t, err)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	run := NewRun(pb, nil, "spans-1", func() time.Time { return clock }, WithLogicalTime(clock))
	for !run.EndReady() {
		for _, s := range run.Ready() {
			clock = clock.Add(time.Second)
			switch s.Name {
			case "a":
				run.Settle("a", contract.Outcome{Result: "ok", Attempts: 2})
			case "b":
				run.Settle("b", contract.Outcome{Err: &contract.StepError{Type: "exit_code", Message: "exit 3", Details: map[string]any{"exit_code": 3}}, Attempts: 1, Recovery: contract.RecoveryNoHandler})
			case "d":
				run.Settle("d", contract.Outcome{Err: &contract.StepError{Type: "http_error", Message: "503"}, Attempts: 1, Recovery: contract.RecoveryNoHandler})
			}
		}
	}
	run.StartEnd()
	agg := run.Finish(nil, nil, 0)
	tr := contract.RunTrace("spans-1", "r1")
	start, end := time.Date(2025, 12, 31, 23, 0, 0, 0, time.UTC), clock.Add(time.Minute)
	spans := run.Spans(&StepSpans{}, RunSpan{Trace: tr, Start: start, End: end}, agg)

	byName := map[string]contract.Span{}
	for _, s := range spans {
		require.Equal(t, tr, s.Trace, s.Name)
		byName[s.Name] = s
	}
	require.Len(t, byName, len(spans), "one span per name")
	root := byName["playbook spans"]
	require.Equal(t, contract.RootSpan(tr), root.ID)
	require.Equal(t, contract.SpanID{}, root.Parent)
	require.Equal(t, start, root.Start)
	require.Equal(t, end, root.End)
	require.True(t, root.Failed)
	require.Contains(t, root.StatusMessage, "failed")
	require.Equal(t, map[string]any{"playbook.name": "spans", "playbook.run_id": "spans-1", "playbook.logical_time": "2026-01-01T00:00:00Z",
		"playbook.outcome": "failed", "playbook.steps": agg.TotalSteps, "playbook.failed_steps": 1}, root.Attrs)

	cases := []struct {
		step   string
		failed bool
		attrs  map[string]any
	}{
		{"a", false, map[string]any{"playbook.step": "a", "playbook.kind": "shell", "playbook.status": "completed", "playbook.attempts": 2, "playbook.routed_to_end": false}},
		{"b", true, map[string]any{"playbook.step": "b", "playbook.kind": "shell", "playbook.status": "failed", "playbook.attempts": 1, "playbook.routed_to_end": true,
			"playbook.recovery": "no_handler", "playbook.error.type": "exit_code", "playbook.exit_code": 3}},
		{"d", false, map[string]any{"playbook.step": "d", "playbook.kind": "http", "playbook.status": "failed", "playbook.attempts": 1, "playbook.routed_to_end": false,
			"playbook.allowed_failure": true, "playbook.recovery": "no_handler", "playbook.error.type": "http_error"}},
	}
	for _, c := range cases {
		s, ok := byName["step "+c.step]
		require.True(t, ok, c.step)
		require.Equal(t, contract.StepSpan(tr, c.step), s.ID, c.step)
		require.Equal(t, root.ID, s.Parent, c.step)
		require.Equal(t, c.failed, s.Failed, c.step)
		require.Equal(t, c.attrs, s.Attrs, c.step)
		st := agg.Steps[c.step]
		require.Equal(t, *st.StartedAt, s.Start, c.step)
		require.Equal(t, *st.EndedAt, s.End, c.step)
	}
	_, ok := byName["step c"]
	require.False(t, ok, "a step that never started (c, skipped) has no span")
}

// A sub-playbook's run links to the step that started it; the step links
// to the child's run.
func TestRunSpansLinkParentAndChild(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: parent}
workflow:
  - {step: sub, tool: {kind: playbook, path: child.yaml}}
`))
	require.NoError(t, err)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	run := NewRun(pb, nil, "p-1", func() time.Time { return clock })
	for !run.EndReady() {
		for _, s := range run.Ready() {
			run.Settle(s.Name, contract.Outcome{Result: map[string]any{}, Attempts: 1})
		}
	}
	run.StartEnd()
	agg := run.Finish(nil, nil, 0)
	tr, child := contract.RunTrace("p-1", "r"), contract.RunTrace("p-1.sub", "c")
	by := contract.SpanLink{Trace: contract.RunTrace("grand", "g"), Span: contract.StepSpan(contract.RunTrace("grand", "g"), "x")}
	spans := run.Spans(&StepSpans{}, RunSpan{Trace: tr, Start: clock, End: clock, StartedBy: &by, Children: map[string]contract.TraceID{"sub": child}}, agg)
	require.Len(t, spans, 3, "the run, sub and end")
	require.Equal(t, []contract.SpanLink{by}, spans[0].Links)
	require.Equal(t, []contract.SpanLink{{Trace: child, Span: contract.RootSpan(child)}}, spans[1].Links)
	require.False(t, spans[0].Failed)
}

// Only the first contract.LoopElementSpans elements of a loop have a
// span, under their step.
func TestElementSpanBound(t *testing.T) {
	tr := contract.RunTrace("w", "r")
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		index  int
		o      contract.Outcome
		ok     bool
		failed bool
		attrs  map[string]any
	}{
		{0, contract.Outcome{Attempts: 1}, true, false, map[string]any{"playbook.step": "each", "playbook.loop.index": 0, "playbook.attempts": 1}},
		{contract.LoopElementSpans - 1, contract.Outcome{Attempts: 2, Err: &contract.StepError{Type: "exit_code", Message: "x", Details: map[string]any{"exit_code": 1}}}, true, true,
			map[string]any{"playbook.step": "each", "playbook.loop.index": contract.LoopElementSpans - 1, "playbook.attempts": 2, "playbook.error.type": "exit_code", "playbook.exit_code": 1}},
		{contract.LoopElementSpans, contract.Outcome{Attempts: 1}, false, false, nil},
		{contract.NoElement, contract.Outcome{Attempts: 1}, false, false, nil},
	}
	for _, c := range cases {
		s, ok := ElementSpan(tr, "each", c.index, at, at.Add(time.Second), c.o)
		require.Equal(t, c.ok, ok, c.index)
		if !ok {
			continue
		}
		require.Equal(t, contract.ElementSpan(tr, "each", c.index), s.ID)
		require.Equal(t, contract.StepSpan(tr, "each"), s.Parent)
		require.Equal(t, c.failed, s.Failed)
		require.Equal(t, c.attrs, s.Attrs)
	}
}

// A step's span is made once, as the step ends for good: not while it
// waits in pending_failed (a retry runs it again), and the run's spans at
// its end are the run's and those of the steps not made before.
func TestStepSpansAsStepsEnd(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: live}
use_pending_failed: true
workflow:
  - {step: a, tool: {kind: shell, command: "true"}, next: b}
  - {step: b, tool: {kind: shell, command: "exit 3"}, next: c}
  - {step: c, tool: {kind: shell, command: "true"}}
`))
	require.NoError(t, err)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	run := NewRun(pb, nil, "live-1", func() time.Time { return clock })
	tr := contract.RunTrace("live-1", "r")
	rs := RunSpan{Trace: tr}
	var ss StepSpans
	names := func(spans []contract.Span) []string {
		var out []string
		for _, s := range spans {
			out = append(out, s.Name)
		}
		return out
	}
	settle := func(step string, o contract.Outcome) {
		for _, s := range run.Ready() {
			require.Equal(t, step, s.Name)
		}
		clock = clock.Add(time.Second)
		run.Settle(step, o)
	}
	require.Empty(t, run.Ended(&ss, rs))
	settle("a", contract.Outcome{Result: "ok", Attempts: 1})
	require.Equal(t, []string{"step a"}, names(run.Ended(&ss, rs)))
	require.Empty(t, run.Ended(&ss, rs), "made once")
	settle("b", contract.Outcome{Err: &contract.StepError{Type: "exit_code", Message: "exit 3"}, Attempts: 1, Recovery: contract.RecoveryNoHandler})
	require.Equal(t, contract.StatusPendingFailed, run.State("b").Status)
	require.Empty(t, run.Ended(&ss, rs), "b may run again")
	require.NoError(t, run.Classify("b", ClassifyRetry, "alice", ""))
	settle("b", contract.Outcome{Result: "ok", Attempts: 1})
	b := run.Ended(&ss, rs)
	require.Equal(t, []string{"step b"}, names(b))
	require.Equal(t, 2, b[0].Attrs["playbook.attempts"])
	require.Equal(t, *run.State("b").StartedAt, b[0].Start, "the span of b's last run")
	require.Equal(t, contract.RootSpan(tr), b[0].Parent)
	settle("c", contract.Outcome{Result: "ok", Attempts: 1})
	require.Equal(t, []string{"step c"}, names(run.Ended(&ss, rs)))
	run.StartEnd()
	agg := run.Finish(nil, nil, 0)
	require.Equal(t, []string{"playbook live", "step end"}, names(run.Spans(&ss, rs, agg)))
}

// A run whose workflow failed before `end` has a failed span saying why,
// and the steps that started have theirs.
func TestRunSpanOfAWorkflowThatFailed(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: broken}
workflow:
  - {step: a, tool: {kind: shell, command: "true"}}
`))
	require.NoError(t, err)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	run := NewRun(pb, nil, "broken-1", func() time.Time { return clock })
	run.Ready()
	tr := contract.RunTrace("broken-1", "r")
	spans := run.Spans(&StepSpans{}, RunSpan{Trace: tr, Start: clock, End: clock.Add(time.Second), Err: "interpreter stalled"}, nil)
	require.Len(t, spans, 2)
	require.True(t, spans[0].Failed)
	require.Equal(t, "failed: interpreter stalled", spans[0].StatusMessage)
	require.Equal(t, "failed", spans[0].Attrs["playbook.outcome"])
	require.Equal(t, "step a", spans[1].Name)
	require.Equal(t, clock.Add(time.Second), spans[1].End, "a step still running ends with the run")
}
