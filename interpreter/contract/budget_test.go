package contract

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"

	"github.com/stretchr/testify/require"
)

func TestCheckPayload(t *testing.T) {
	require.Nil(t, CheckPayload("the input of step a", map[string]any{"x": 1}))
	err := CheckPayload("the input of step a", map[string]any{"x": math.Inf(1)})
	require.Equal(t, &StepError{Type: ErrTemplate, Message: "the input of step a cannot be encoded as JSON: json: unsupported value: +Inf"}, err)
	err = CheckPayload("the input of step a", strings.Repeat("x", 3<<20))
	require.Equal(t, &StepError{Type: ErrInputTooLarge, Message: "the input of step a is 3 MiB, over the budget of 1 MiB for one payload of the run's history; pass large data through files or a store and give the step its path"}, err)
}

// Tens of thousands of steps do not fit even with every result stubbed:
// the steps that completed keep their status and attempts only, and the
// failed ones keep their whole entry.
func TestAggregateOfVeryManyStepsKeepsTheFailedOnesWhole(t *testing.T) {
	agg := &Aggregate{Playbook: "many", Steps: map[string]*StepState{}}
	at := time.Unix(0, 0).UTC()
	for i := range 12000 {
		agg.Steps[fmt.Sprintf("step_%05d", i)] = &StepState{Status: StatusCompleted, Attempts: 1, StartedAt: &at, EndedAt: &at, TakenNext: []string{fmt.Sprintf("step_%05d", i+1)}}
	}
	agg.Steps["broken"] = &StepState{Status: StatusFailed, Attempts: 3, Error: &StepError{Type: ErrExitCode, Message: "exited with code 1"}, RoutedToEnd: true}
	out := BoundAggregate(agg, AggregateBudget, func(string, string) string { return "" })
	n, err := EncodedSize(out)
	require.NoError(t, err)
	require.LessOrEqual(t, n, AggregateBudget)
	require.Equal(t, agg.Steps["broken"], out.Steps["broken"])
	for name, st := range out.Steps {
		if name != "broken" {
			require.Equal(t, &StepState{Status: StatusCompleted, Attempts: 1}, st)
			break
		}
	}
	require.NotNil(t, agg.Steps["step_00007"].StartedAt, "the run's own states are not touched")
	require.Equal(t, []string{"step_00008"}, agg.Steps["step_00007"].TakenNext)
}

// Past that, at tens of thousands of steps with long names, the routine
// steps are left out and counted.
func TestAggregateLeavesOutRoutineStepsAsALastResort(t *testing.T) {
	agg := &Aggregate{Playbook: "many", Steps: map[string]*StepState{spec.EndStep: {Status: StatusCompleted}}}
	for i := range 30000 {
		agg.Steps[fmt.Sprintf("%s_%05d", strings.Repeat("s", 60), i)] = &StepState{Status: StatusCompleted, Attempts: 1}
	}
	agg.Steps["broken"] = &StepState{Status: StatusFailed, Attempts: 1, Error: &StepError{Type: ErrExitCode, Message: "exited with code 1"}}
	out := BoundAggregate(agg, AggregateBudget, func(string, string) string { return "" })
	require.Equal(t, 30000, out.StepsOmitted)
	require.Equal(t, []string{"broken", spec.EndStep}, slices.Sorted(maps.Keys(out.Steps)))
	require.Len(t, out.Steps, 2)
	require.Len(t, agg.Steps, 30002)
}

// A retry reuses only results the earlier aggregate carries whole.
func TestReusableLeavesOutStubs(t *testing.T) {
	agg := &Aggregate{Steps: map[string]*StepState{
		"whole": {Status: StatusCompleted, Result: map[string]any{"rows": 3.0}},
		"stub":  {Status: StatusCompleted, Result: map[string]any{"truncated": true, "bytes": 2e6, "budget": 1.5e6, "full_in": "x"}},
		"holds": {Status: StatusCompleted, Result: map[string]any{"steps": map[string]any{"s": map[string]any{"result": expr.Truncated(2e6, 1, "x")}}}},
	}}
	require.Equal(t, []string{"whole"}, slices.Sorted(maps.Keys(Reusable(agg))))
	agg.StepsCompacted = true
	require.Empty(t, Reusable(agg), "compacted entries lost their results")
}

// Thousands of failed steps with long errors: the aggregate still fits,
// each error keeping its type and first line, and the count stays true.
func TestAggregateOfThousandsOfFailedStepsFits(t *testing.T) {
	agg := &Aggregate{Playbook: "failing", Steps: map[string]*StepState{}, FailedStepsCount: 20000}
	for i := range 20000 {
		name := fmt.Sprintf("step_%05d", i)
		agg.FailedSteps = append(agg.FailedSteps, name)
		agg.Steps[name] = &StepState{Status: StatusFailed, Attempts: 1, Error: &StepError{Type: ErrExitCode, Message: "exited with code 1: " + strings.Repeat("e", 300) + "\nmore"}}
	}
	out := BoundAggregate(agg, AggregateBudget, func(string, string) string { return "" })
	n, err := EncodedSize(out)
	require.NoError(t, err)
	require.LessOrEqual(t, n, AggregateBudget)
	require.Len(t, out.FailedSteps, 1000)
	require.Equal(t, 20000, out.FailedStepsCount)
	require.Len(t, out.Steps, 100, "the first hundred failed steps")
	require.Equal(t, 19900, out.StepsOmitted)
	require.Equal(t, ErrExitCode, out.Steps["step_00007"].Error.Type)
	require.Len(t, agg.Steps["step_00007"].Error.Message, 325, "the run's own states are not touched")
}

// A batch of a run from before the loop driver returns its outcomes
// within one payload: the largest results become stubs.
func TestBatchOutcomesFitOnePayload(t *testing.T) {
	big := strings.Repeat("x", 600<<10)
	outcomes := []Outcome{{Result: "small"}, {Result: big}, {Result: big + "y"}, {Err: &StepError{Type: "exit_code"}}}
	out := BoundOutcomes(outcomes)
	require.Nil(t, CheckPayload("", out))
	require.Equal(t, "small", out[0].Result)
	_, stub := expr.TruncatedSize(out[2].Result)
	require.True(t, stub, "the largest first")
	require.True(t, out[1].Result == big, "the second largest fits")

	few := []Outcome{{Result: "a"}, {Result: "b"}}
	require.Equal(t, few, BoundOutcomes(few))
}

// A run that keeps large values in its store checks a value against
// LargeValueBudget, and says what to do past it without pointing at a
// store it already has.
func TestLargeValuesHaveTheirOwnBudget(t *testing.T) {
	large := BudgetsFor(true)
	require.Equal(t, Budgets{Payload: LargeValueBudget, Aggregate: LargeAggregateBudget}, large)
	require.Equal(t, Budgets{Payload: PayloadBudget, Aggregate: AggregateBudget}, BudgetsFor(false))
	require.Nil(t, large.Check("the input of step a", strings.Repeat("x", 3<<20)))
	err := large.Check("the input of step a", strings.Repeat("x", 65<<20))
	require.Equal(t, &StepError{Type: ErrInputTooLarge, Message: "the input of step a is 65 MiB, over the budget of 64 MiB for one value of the run; pass large data through files and give the step their paths"}, err)
}
