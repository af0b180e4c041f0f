package engine

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"

	"github.com/stretchr/testify/require"
)

// budgetRun is a run of three python steps and a noop whose results are set
// by the test, as if their activities had returned them.
func budgetRun(t *testing.T, results map[string]any) *Run {
	t.Helper()
	pb, err := spec.Parse("big.yaml", []byte(`metadata: {name: big}
workflow:
  - {step: a, tool: {kind: python, code: "def main(): return 1"}}
  - {step: b, tool: {kind: python, code: "def main(): return 1"}}
  - {step: c, tool: {kind: python, code: "def main(): return 1"}}
  - {step: d, tool: {kind: noop, result: 1}}
`))
	require.NoError(t, err)
	run := NewRun(pb, nil, "big-1", func() time.Time { return time.Unix(0, 0).UTC() })
	for _, s := range run.Ready() {
		run.Complete(s.Name, results[s.Name], 1)
	}
	require.True(t, run.EndReady())
	return run
}

func TestAggregateWithinBudgetIsWrittenAsIs(t *testing.T) {
	run := budgetRun(t, map[string]any{"a": "small", "b": 2.0})
	agg := run.Finish(nil, nil, 0)
	require.Same(t, agg, run.Bounded(agg))
}

// Three results of 900 KiB make a 2.7 MiB aggregate: the two largest (by
// name on a tie) become stubs saying where the whole value is, the run's
// own state keeps them whole, and what is written fits the budget.
func TestAggregateOverBudgetStubsTheLargestResults(t *testing.T) {
	big := strings.Repeat("x", 900<<10)
	run := budgetRun(t, map[string]any{"a": big, "b": big + "y", "c": big, "d": "small"})
	agg := run.Finish(nil, nil, 0)
	out := run.Bounded(agg)

	n, err := contract.EncodedSize(out)
	require.NoError(t, err)
	require.LessOrEqual(t, n, contract.AggregateBudget)
	require.Equal(t, expr.Truncated(900<<10+3, contract.AggregateBudget, "the step's activity completion in the run's history (playbook history RUN) and its attempt logs (playbook logs RUN b)"), out.Steps["b"].Result)
	size, ok := expr.TruncatedSize(out.Steps["a"].Result)
	require.True(t, ok, "a is the larger of a and c by name")
	require.Equal(t, 900<<10+2, size, "a JSON string's size counts its quotes")
	require.Equal(t, big, out.Steps["c"].Result)
	require.Equal(t, "small", out.Steps["d"].Result)
	require.Equal(t, big, run.State("a").Result, "the run's state keeps the whole result")
	require.Equal(t, big, agg.Steps["a"].Result)
}

// A value JSON cannot carry (a python step cannot return one, but a noop's
// template can compute one) is replaced, whatever its size, so that the
// run can still write its aggregate.
func TestAggregateStubsWhatJSONCannotCarry(t *testing.T) {
	run := budgetRun(t, map[string]any{"a": "ok", "d": math.NaN()})
	out := run.Bounded(run.Finish(nil, nil, 0))
	_, err := contract.EncodedSize(out)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"unencodable": true, "error": "json: unsupported value: NaN"}, out.Steps["d"].Result)
	require.Equal(t, "ok", out.Steps["a"].Result)
}

// A stub that came back through JSON (a sub-playbook's aggregate) is still
// recognised, and an ordinary map with the same keys is not a stub.
func TestTruncatedSize(t *testing.T) {
	n, ok := expr.TruncatedSize(map[string]any{"truncated": true, "bytes": 2048.0, "budget": 1024.0, "full_in": "x"})
	require.True(t, ok)
	require.Equal(t, 2048, n)
	_, ok = expr.TruncatedSize(map[string]any{"truncated": true, "bytes": 2048.0, "rows": 3})
	require.False(t, ok)
	_, ok = expr.TruncatedSize(map[string]any{"truncated": "yes", "bytes": 1, "budget": 1, "full_in": "x"})
	require.False(t, ok)
}

// Tens of thousands of steps do not fit even with every result stubbed:
// the steps that completed keep their status and attempts only, and the
// failed ones keep their whole entry.
func TestAggregateOfVeryManyStepsKeepsTheFailedOnesWhole(t *testing.T) {
	agg := &contract.Aggregate{Playbook: "many", Steps: map[string]*contract.StepState{}}
	at := time.Unix(0, 0).UTC()
	for i := range 12000 {
		agg.Steps[fmt.Sprintf("step_%05d", i)] = &contract.StepState{Status: contract.StatusCompleted, Attempts: 1, StartedAt: &at, EndedAt: &at, TakenNext: []string{fmt.Sprintf("step_%05d", i+1)}}
	}
	agg.Steps["broken"] = &contract.StepState{Status: contract.StatusFailed, Attempts: 3, Error: &contract.StepError{Type: contract.ErrExitCode, Message: "exited with code 1"}, RoutedToEnd: true}
	out := contract.BoundAggregate(agg, contract.AggregateBudget, func(string, string) string { return "" })
	n, err := contract.EncodedSize(out)
	require.NoError(t, err)
	require.LessOrEqual(t, n, contract.AggregateBudget)
	require.Equal(t, agg.Steps["broken"], out.Steps["broken"])
	for name, st := range out.Steps {
		if name != "broken" {
			require.Equal(t, &contract.StepState{Status: contract.StatusCompleted, Attempts: 1}, st)
			break
		}
	}
	require.NotNil(t, agg.Steps["step_00007"].StartedAt, "the run's own states are not touched")
	require.Equal(t, []string{"step_00008"}, agg.Steps["step_00007"].TakenNext)
}

// Past that, at tens of thousands of steps with long names, the routine
// steps are left out and counted.
func TestAggregateLeavesOutRoutineStepsAsALastResort(t *testing.T) {
	agg := &contract.Aggregate{Playbook: "many", Steps: map[string]*contract.StepState{spec.EndStep: {Status: contract.StatusCompleted}}}
	for i := range 30000 {
		agg.Steps[fmt.Sprintf("%s_%05d", strings.Repeat("s", 60), i)] = &contract.StepState{Status: contract.StatusCompleted, Attempts: 1}
	}
	agg.Steps["broken"] = &contract.StepState{Status: contract.StatusFailed, Attempts: 1, Error: &contract.StepError{Type: contract.ErrExitCode, Message: "exited with code 1"}}
	out := contract.BoundAggregate(agg, contract.AggregateBudget, func(string, string) string { return "" })
	require.Equal(t, 30000, out.StepsOmitted)
	require.Equal(t, []string{"broken", spec.EndStep}, keysOf(map[string]any{"broken": out.Steps["broken"], spec.EndStep: out.Steps[spec.EndStep]}))
	require.Len(t, out.Steps, 2)
	require.Len(t, agg.Steps, 30002)
}

func TestCheckPayload(t *testing.T) {
	require.Nil(t, contract.CheckPayload("the input of step a", map[string]any{"x": 1}))
	err := contract.CheckPayload("the input of step a", map[string]any{"x": math.Inf(1)})
	require.Equal(t, &contract.StepError{Type: contract.ErrTemplate, Message: "the input of step a cannot be encoded as JSON: json: unsupported value: +Inf"}, err)
	err = contract.CheckPayload("the input of step a", strings.Repeat("x", 3<<20))
	require.Equal(t, &contract.StepError{Type: contract.ErrInputTooLarge, Message: "the input of step a is 3 MiB, over the budget of 1 MiB for one payload of the run's history; pass large data through files or a store and give the step its path"}, err)
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int]string{900: "900 B", 1 << 10: "1 KiB", 1536: "1.5 KiB", 3 << 19: "1.5 MiB", 2<<20 + 1: "2 MiB", 1<<20 + 1<<19 + 1<<17: "1.6 MiB"} {
		require.Equal(t, want, expr.FormatBytes(n), n)
	}
}

// An expression that fails on a stub says which step's result was
// truncated, and by how much.
func TestExpressionOnATruncatedResultSaysSo(t *testing.T) {
	e, err := expr.CompileExpr("steps.extract.result.rows > 0", expr.ScopeStep, true)
	require.NoError(t, err)
	env := map[string]any{"workload": map[string]any{}, "execution_id": "x", "playbook": map[string]any{},
		"steps": map[string]any{"extract": map[string]any{"status": "completed", "result": expr.Truncated(3<<20, contract.PayloadBudget, "history")}}}
	_, err = e.EvalBool(env)
	require.EqualError(t, err, `"steps.extract.result.rows > 0": invalid operation: <nil> > int (1:27) (steps.extract.result was truncated: 3 MiB, over the budget of 1 MiB; see its full_in)`)

	env["steps"] = map[string]any{"extract": map[string]any{"status": "completed", "result": []any{map[string]any{"rows": 1.0}, expr.Truncated(2<<20, contract.LoopResultBudget, "history")}}}
	e, err = expr.CompileExpr("steps.extract.result[1].rows > 0", expr.ScopeStep, true)
	require.NoError(t, err)
	_, err = e.EvalBool(env)
	require.ErrorContains(t, err, "(steps.extract.result[1] was truncated: 2 MiB, over the budget of 512 KiB; see its full_in)")

	// A sub-playbook's aggregate, through JSON, holds its steps' stubs.
	sub := map[string]any{"status": "completed", "steps": map[string]any{"load": map[string]any{"status": "completed",
		"result": map[string]any{"truncated": true, "bytes": 1600000.0, "budget": float64(contract.AggregateBudget), "full_in": "x"}}}}
	env["steps"] = map[string]any{"extract": map[string]any{"status": "completed", "result": sub}}
	e, err = expr.CompileExpr("steps.extract.result.steps.load.result.rows > 0", expr.ScopeStep, true)
	require.NoError(t, err)
	_, err = e.EvalBool(env)
	require.ErrorContains(t, err, "(steps.extract.result.steps.load.result was truncated: 1.5 MiB, over the budget of 1.5 MiB; see its full_in)")
}

// A step's retry_when and stop_when travel with each attempt, and with
// them only the part of the run they read.
func TestScopeForCarriesOnlyWhatTheExpressionsRead(t *testing.T) {
	pb, err := spec.Parse("s.yaml", []byte(`metadata: {name: s}
workload: {limit: 3, secret_blob: "x", other: 1}
workflow:
  - {step: a, tool: {kind: noop, result: {rows: 5}}}
  - {step: b, tool: {kind: noop, result: {blob: "large"}}}
  - step: c
    depends_on: [a, b]
    tool: {kind: shell, command: "true"}
    retry:
      max_attempts: 3
      retry_when: "steps.a.result.rows > workload.limit"
      stop_when: "steps['a'].status == 'failed'"
`))
	require.NoError(t, err)
	run := NewRun(pb, nil, "s-1", time.Now)
	for _, s := range run.Ready() {
		run.Complete(s.Name, map[string]any{"rows": 5.0}, 1)
	}
	c := pb.Step("c")
	scope := run.ScopeFor(c.Retry.RetryWhen, c.Retry.StopWhen)
	require.Equal(t, []string{"a"}, keysOf(scope["steps"]))
	require.Equal(t, map[string]any{"limit": 3}, scope["workload"])
	require.Equal(t, "s-1", scope["execution_id"])
	ok, err := c.Retry.RetryWhen.EvalBool(scope)
	require.NoError(t, err)
	require.True(t, ok, "the expression reads the same in the pruned scope")

	// $env reads through the whole environment.
	e, err := expr.CompileExpr("$env.steps.b.result.blob == 'large'", expr.ScopeRetry, true)
	require.NoError(t, err)
	scope = run.ScopeFor(e)
	require.Equal(t, []string{"a", "b", "c", "end"}, keysOf(scope["steps"]))
	require.Len(t, scope["workload"], 3)

	// Reading a map as a whole carries all of it.
	e, err = expr.CompileExpr("len(steps) > 1 && len(workload) > 0", expr.ScopeRetry, true)
	require.NoError(t, err)
	scope = run.ScopeFor(e)
	require.Equal(t, []string{"a", "b", "c", "end"}, keysOf(scope["steps"]))
	require.Len(t, scope["workload"], 3)
}

func keysOf(v any) []string {
	return slices.Sorted(maps.Keys(v.(map[string]any)))
}

// A retry reuses only results the earlier aggregate carries whole.
func TestReusableLeavesOutStubs(t *testing.T) {
	agg := &contract.Aggregate{Steps: map[string]*contract.StepState{
		"whole": {Status: contract.StatusCompleted, Result: map[string]any{"rows": 3.0}},
		"stub":  {Status: contract.StatusCompleted, Result: map[string]any{"truncated": true, "bytes": 2e6, "budget": 1.5e6, "full_in": "x"}},
		"holds": {Status: contract.StatusCompleted, Result: map[string]any{"steps": map[string]any{"s": map[string]any{"result": expr.Truncated(2e6, 1, "x")}}}},
	}}
	require.Equal(t, []string{"whole"}, keysOf(anyMap(contract.Reusable(agg))))
	agg.StepsCompacted = true
	require.Empty(t, contract.Reusable(agg), "compacted entries lost their results")
}

func anyMap(m map[string]*contract.StepState) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Thousands of failed steps with long errors: the aggregate still fits,
// each error keeping its type and first line, and the count stays true.
func TestAggregateOfThousandsOfFailedStepsFits(t *testing.T) {
	agg := &contract.Aggregate{Playbook: "failing", Steps: map[string]*contract.StepState{}, FailedStepsCount: 20000}
	for i := range 20000 {
		name := fmt.Sprintf("step_%05d", i)
		agg.FailedSteps = append(agg.FailedSteps, name)
		agg.Steps[name] = &contract.StepState{Status: contract.StatusFailed, Attempts: 1, Error: &contract.StepError{Type: contract.ErrExitCode, Message: "exited with code 1: " + strings.Repeat("e", 300) + "\nmore"}}
	}
	out := contract.BoundAggregate(agg, contract.AggregateBudget, func(string, string) string { return "" })
	n, err := contract.EncodedSize(out)
	require.NoError(t, err)
	require.LessOrEqual(t, n, contract.AggregateBudget)
	require.Len(t, out.FailedSteps, 1000)
	require.Equal(t, 20000, out.FailedStepsCount)
	require.Len(t, out.Steps, 100, "the first hundred failed steps")
	require.Equal(t, 19900, out.StepsOmitted)
	require.Equal(t, contract.ErrExitCode, out.Steps["step_00007"].Error.Type)
	require.Len(t, agg.Steps["step_00007"].Error.Message, 325, "the run's own states are not touched")
}

// A batch of a run from before the loop driver returns its outcomes
// within one payload: the largest results become stubs.
func TestBatchOutcomesFitOnePayload(t *testing.T) {
	big := strings.Repeat("x", 600<<10)
	outcomes := []contract.Outcome{{Result: "small"}, {Result: big}, {Result: big + "y"}, {Err: &contract.StepError{Type: "exit_code"}}}
	out := contract.BoundOutcomes(outcomes)
	require.Nil(t, contract.CheckPayload("", out))
	require.Equal(t, "small", out[0].Result)
	_, stub := expr.TruncatedSize(out[2].Result)
	require.True(t, stub, "the largest first")
	require.True(t, out[1].Result == big, "the second largest fits")

	few := []contract.Outcome{{Result: "a"}, {Result: "b"}}
	require.Equal(t, few, contract.BoundOutcomes(few))
}
