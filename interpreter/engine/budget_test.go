package engine

import (
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

// A run that keeps large values in its store writes its aggregate whole
// up to LargeAggregateBudget: three results of 900 KiB are not stubbed.
func TestAggregateOfARunWithLargeValuesKeepsItsResultsWhole(t *testing.T) {
	big := strings.Repeat("x", 900<<10)
	pb, err := spec.Parse("big.yaml", []byte(`metadata: {name: big}
workflow:
  - {step: a, tool: {kind: python, code: "def main(): return 1"}}
  - {step: b, tool: {kind: python, code: "def main(): return 1"}}
  - {step: c, tool: {kind: python, code: "def main(): return 1"}}
`))
	require.NoError(t, err)
	run := NewRun(pb, nil, "big-1", func() time.Time { return time.Unix(0, 0).UTC() }, WithLargeValues())
	for _, s := range run.Ready() {
		run.Complete(s.Name, big, 1)
	}
	require.True(t, run.EndReady())
	agg := run.Finish(nil, nil, 0)
	require.Same(t, agg, run.Bounded(agg))
}
