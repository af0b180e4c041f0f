package engine

import (
	"testing"
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"

	"github.com/stretchr/testify/require"
)

func TestFailedStepRoutesToEnd(t *testing.T) {
	agg, _ := simulate(t, `metadata: {name: t}
failure_mode: continue
workflow:
  - {step: transform, tool: {kind: noop}, next: report}
  - {step: report, tool: {kind: noop}}
  - {step: cleanup, depends_on: [transform], on_failure: run, tool: {kind: noop, result: "{{ steps.transform.result }}"}}
`, map[string]scripted{"transform": {fail: "exit_code"}})
	tr := agg.Steps["transform"]
	require.True(t, tr.RoutedToEnd)
	require.Equal(t, "transform", *tr.OriginalFailedStep)
	require.Nil(t, tr.Result, "a failed step's result is null")
	require.Equal(t, &contract.StepError{Type: "exit_code", Message: "boom"}, tr.Error)
	rep := agg.Steps["report"]
	require.False(t, rep.RoutedToEnd)
	require.Equal(t, "transform", *rep.OriginalFailedStep)
	require.Equal(t, []string{"transform"}, agg.FailedSteps)
	require.Equal(t, 3, agg.TotalSteps)
	require.Len(t, agg.Steps, 4, "steps holds end too")
}

func TestOnFailureRunSeesNullResult(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
workflow:
  - {step: a, tool: {kind: noop}}
  - {step: b, depends_on: [a], on_failure: run, tool: {kind: noop, result: "{{ steps.a.result == nil ? 'null' : 'set' }} {{ steps.a.error.type }}"}}
`))
	require.NoError(t, err)
	run := NewRun(pb, nil, "t-1", time.Now)
	require.Len(t, run.Ready(), 1)
	run.Fail("a", &contract.StepError{Type: "exit_code", Message: "x"}, 2)
	ready := run.Ready()
	require.Len(t, ready, 1)
	toolSpec, err := run.RenderTool(ready[0])
	require.NoError(t, err)
	require.Equal(t, "null exit_code", toolSpec["result"])
}

func TestEventsAreStampedAndOrdered(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte("metadata: {name: t}\nworkflow:\n  - {step: a, tool: {kind: noop}, next: b}\n  - {step: b, tool: {kind: noop}}\n"))
	require.NoError(t, err)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	run := NewRun(pb, nil, "t-1", func() time.Time { return at })
	run.Ready()
	run.Complete("a", nil, 2)
	run.Ready()
	run.Fail("b", &contract.StepError{Type: "exit_code", Message: "x"}, 1)
	run.StartEnd()
	run.Finish(nil, nil, 0)
	var types []string
	for i, e := range run.Events() {
		require.Equal(t, i+1, e.Seq)
		require.Equal(t, at, e.Time)
		types = append(types, e.Type+":"+e.Step)
	}
	require.Equal(t, []string{"step_started:a", "step_completed:a", "step_started:b", "step_failed:b", "step_started:end", "end_evaluated:end", "playbook_failed:", "workflow_failed:"}, types)
	b := run.State("b")
	require.Equal(t, at, *b.StartedAt)
	require.Equal(t, at, *b.EndedAt)
}

func TestRetriedAttemptsBecomeEvents(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte("metadata: {name: t}\nworkflow:\n  - {step: a, tool: {kind: noop}}\n"))
	require.NoError(t, err)
	run := NewRun(pb, nil, "t-1", time.Now)
	run.Ready()
	fail := contract.StepError{Type: "exit_code", Message: "x"}
	run.Settle("a", contract.Outcome{Err: &fail, Attempts: 3, Recovery: contract.RecoveryNoHandler, AttemptErrors: []contract.AttemptRecord{
		{Attempt: 1, Error: fail}, {Attempt: 2, Error: fail, Recovery: contract.RecoveryRetried, RecoveryExitCode: new(7)}, {Attempt: 3, Error: fail}}})
	var types []string
	for _, e := range run.Events() {
		types = append(types, e.Type)
	}
	require.Equal(t, []string{"step_started", "step_retry", "step_retry", "step_retry_exhausted", "step_failed"}, types)
	failed := run.Events()[4]
	require.Equal(t, map[string]any{"routed_to_end": true, "original_failed_step": "a"}, failed.Data)
	// A retry an exit-code rule made says its recovery script ran.
	require.Equal(t, "attempt 1 failed; attempt 2 followed", run.Events()[1].Message)
	require.Equal(t, "attempt 2 failed; its recovery script ran and exited 7; attempt 3 followed", run.Events()[2].Message)
	require.Equal(t, 7, run.Events()[2].Data["recovery_exit_code"])
}

// A failed run's first view names its cause: the Web UI details lead with
// the first step that failed, in file order, and why.
func TestFailedRunDetailsLeadWithTheCause(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte("metadata: {name: t}\nworkflow:\n  - {step: a, tool: {kind: noop}, next: [{step: b}]}\n  - {step: b, tool: {kind: noop}}\n"))
	require.NoError(t, err)
	run := NewRun(pb, nil, "t-1", time.Now)
	run.Ready()
	run.Settle("a", contract.Outcome{Result: 1, Attempts: 1})
	run.Ready()
	require.Empty(t, run.FirstFailure())
	run.Settle("b", contract.Outcome{Err: &contract.StepError{Type: "exit_code", Message: "exited with code 3: disk full\nmore"}, Attempts: 1})
	require.Equal(t, "b: exit_code: exited with code 3: disk full", run.FirstFailure())
	require.NotContains(t, run.DetailsMarkdown(), "**failed**", "not while the run goes on")
	run.Finish(nil, nil, 1)
	require.Contains(t, run.DetailsMarkdown(), "**playbook t**\n\n**failed**: b: exit_code: exited with code 3: disk full\n\n| step |")
}

// A when that orders a null is false: the run takes the else branch. A
// run from before the change (the workflow's version says so) keeps the
// expression_error it had.
func TestWhenOrderingANullIsFalse(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
workflow:
  - step: probe
    tool: {kind: noop}
    next:
      - when: "{{ steps.probe.result.count > 3 }}"
        then: [big]
      - else: [small]
  - {step: big, tool: {kind: noop}}
  - {step: small, tool: {kind: noop}}
`))
	require.NoError(t, err)
	for _, allowed := range []bool{true, false} {
		asked := 0
		run := NewRun(pb, nil, "t-1", time.Now, WithNullSafeComparisons(func() bool { asked++; return allowed }))
		run.Ready()
		run.Settle("probe", contract.Outcome{Result: map[string]any{"count": nil}, Attempts: 1})
		require.Equal(t, 1, asked, "asked once, where the null was ordered")
		if allowed {
			require.Equal(t, contract.StatusCompleted, run.State("probe").Status)
			require.Equal(t, []string{"small"}, run.State("probe").TakenNext)
			continue
		}
		require.Equal(t, contract.StatusFailed, run.State("probe").Status)
		require.Contains(t, run.State("probe").Error.Message, "invalid operation: <nil> > int")
	}
	// No null ordered: nothing is asked.
	asked := 0
	run := NewRun(pb, nil, "t-1", time.Now, WithNullSafeComparisons(func() bool { asked++; return true }))
	run.Ready()
	run.Settle("probe", contract.Outcome{Result: map[string]any{"count": 5}, Attempts: 1})
	require.Zero(t, asked)
	require.Equal(t, []string{"big"}, run.State("probe").TakenNext)
}

// A when that takes a field of null (the error of a step that did not
// fail) reads null when the run allows it, and fails the step as before
// when it does not; the run asks once, where it happened.
func TestWhenFieldOfNullIsNull(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
workflow:
  - step: probe
    tool: {kind: noop}
    next:
      - when: "steps.probe.error.type == 'disk_low'"
        then: [alarm]
      - else: [fine]
  - {step: alarm, tool: {kind: noop}}
  - {step: fine, tool: {kind: noop}}
`))
	require.NoError(t, err)
	for _, allowed := range []bool{true, false} {
		asked := 0
		run := NewRun(pb, nil, "t-1", time.Now, WithNullSafeComparisons(func() bool { t.Fatal("no ordering here"); return false }),
			WithNullSafeMembers(func() bool { asked++; return allowed }))
		run.Ready()
		run.Settle("probe", contract.Outcome{Result: "ok", Attempts: 1})
		require.Equal(t, 1, asked)
		if allowed {
			require.Equal(t, []string{"fine"}, run.State("probe").TakenNext)
			continue
		}
		require.Equal(t, contract.StatusFailed, run.State("probe").Status)
		require.Contains(t, run.State("probe").Error.Message, "cannot fetch type from <nil>")
	}
}

// The two rules are asked apart, each where an evaluation needs it: a
// run that has the ordering rule and not the member rule (recorded
// between the two changes) fails on a field of null as it did, whichever
// comes first. And a field of a result kept only as a stub (over the
// budget) is never taken as null: the error that says so stands.
func TestNullRulesAskedApart(t *testing.T) {
	for _, c := range []struct {
		when  string
		asked []string
	}{
		{"steps.probe.result.n > 3 or steps.probe.error.type == 'x'", []string{"compare", "member"}},
		{"steps.probe.error.type == 'x' or steps.probe.result.n > 3", []string{"member"}},
	} {
		pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
workflow:
  - step: probe
    tool: {kind: noop}
    next:
      - when: "`+c.when+`"
        then: [big]
      - else: [small]
  - {step: big, tool: {kind: noop}}
  - {step: small, tool: {kind: noop}}
`))
		require.NoError(t, err)
		var asked []string
		run := NewRun(pb, nil, "t-1", time.Now,
			WithNullSafeComparisons(func() bool { asked = append(asked, "compare"); return true }),
			WithNullSafeMembers(func() bool { asked = append(asked, "member"); return false }))
		run.Ready()
		run.Settle("probe", contract.Outcome{Result: map[string]any{"n": nil}, Attempts: 1})
		require.Equal(t, c.asked, asked, c.when)
		require.Equal(t, contract.StatusFailed, run.State("probe").Status, c.when)
		require.Contains(t, run.State("probe").Error.Message, "cannot fetch type from <nil>", c.when)
	}

	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
workflow:
  - step: probe
    tool: {kind: noop}
    next:
      - when: "steps.probe.result.rows.count > 0"
        then: [big]
      - else: [small]
  - {step: big, tool: {kind: noop}}
  - {step: small, tool: {kind: noop}}
`))
	require.NoError(t, err)
	run := NewRun(pb, nil, "t-1", time.Now, WithNullSafeMembers(func() bool { t.Fatal("a stub is not a null"); return true }))
	run.Ready()
	run.Settle("probe", contract.Outcome{Result: expr.Truncated(2<<20, 256<<10, "the history"), Attempts: 1})
	require.Equal(t, contract.StatusFailed, run.State("probe").Status)
	require.Contains(t, run.State("probe").Error.Message, "steps.probe.result was truncated")
}
