package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"

	"github.com/stretchr/testify/require"
)

// Elements end in any order; the tally gives what CombineLoop gives for the
// same outcomes in element order, and survives a trip through JSON (a
// driver's continue-as-new).
func TestLoopTallyMatchesCombineLoop(t *testing.T) {
	cases := map[string][]contract.Outcome{
		"all done":  {{Result: 1.0, Attempts: 1}, {Result: "b", Attempts: 2}, {Result: nil, Attempts: 1}},
		"failed":    {{Result: 1.0, Attempts: 1}, {Err: &contract.StepError{Type: contract.ErrExitCode, Message: "exited with code 1"}, Attempts: 3, Recovery: contract.RecoveryNoHandler}, {Err: &contract.StepError{Type: contract.ErrExitCode, Message: "later"}, Attempts: 1}},
		"cancelled": {{Result: 1.0, Attempts: 1}, {Err: &contract.StepError{Type: contract.ErrCancelled, Message: "not started"}}, {Err: &contract.StepError{Type: contract.ErrCancelled, Message: "not started"}}},
	}
	for name, outcomes := range cases {
		tally := contract.NewLoopTally(len(outcomes))
		for i := len(outcomes) - 1; i >= 0; i-- { // the last ends first
			tally.Add(i, outcomes[i])
			b, err := json.Marshal(tally)
			require.NoError(t, err)
			tally = &contract.LoopTally{}
			require.NoError(t, json.Unmarshal(b, tally))
		}
		want, got := CombineLoop(outcomes), tally.Outcome("history")
		require.Equal(t, want.Err, got.Err, name)
		require.Equal(t, want.Attempts, got.Attempts, name)
		require.Equal(t, want.Recovery, got.Recovery, name)
		require.Equal(t, want.Result, got.Result, name)
	}
}

// Past its budget the tally keeps no result: the step's result is a stub
// that says how large the list was and where the elements' results are.
func TestLoopTallyOverBudgetIsAStub(t *testing.T) {
	big := strings.Repeat("x", 200<<10)
	tally := contract.NewLoopTally(4)
	for i := range 4 {
		tally.Add(i, contract.Outcome{Result: big, Attempts: 1})
	}
	require.Nil(t, tally.Results)
	o := tally.Outcome("the driver's history")
	require.Nil(t, o.Err)
	require.Equal(t, expr.Truncated(4*(200<<10+3)+1, contract.LoopResultBudget, "the driver's history"), o.Result)
}

// Results kept elsewhere (a retry's reused elements) count done and count
// against the budget, with null in their places; past the budget with the
// others, the step's result is the stub it would be with them kept here.
func TestLoopTallyCountsKeptResults(t *testing.T) {
	tally := contract.NewLoopTally(3)
	tally.AddKept(2, 10)
	tally.Add(1, contract.Outcome{Result: "new", Attempts: 1})
	o := tally.Outcome("history")
	require.Nil(t, o.Err)
	require.Equal(t, []any{nil, "new", nil}, o.Result)
	require.Equal(t, 3, tally.Done)

	big := strings.Repeat("x", 200<<10)
	kept, here := contract.NewLoopTally(3), contract.NewLoopTally(3)
	kept.AddKept(2, 2*(200<<10+3))
	kept.Add(2, contract.Outcome{Result: big, Attempts: 1})
	for i := range 3 {
		here.Add(i, contract.Outcome{Result: big, Attempts: 1})
	}
	require.Equal(t, here.Outcome("history").Result, kept.Outcome("history").Result)
}

// A tally keeps the first 100 failed attempts, each labelled with its
// element, and counts the rest.
func TestLoopTallyBoundsItsAttemptRecords(t *testing.T) {
	tally := contract.NewLoopTally(150)
	for i := range 150 {
		tally.Add(i, contract.Outcome{Result: i, Attempts: 2, AttemptErrors: []contract.AttemptRecord{{Attempt: 1, Error: contract.StepError{Type: contract.ErrExitCode, Message: "flaky"}}}})
	}
	o := tally.Outcome("")
	require.Len(t, o.AttemptErrors, 101)
	require.Equal(t, "element 1 of 150 (index 0): flaky", o.AttemptErrors[0].Error.Message)
	require.Equal(t, "50 more failed attempts of the loop's elements are in its history", o.AttemptErrors[100].Error.Message)
}

// In a driver the scope came through JSON: the workload is merged again
// from the playbook (whole numbers stay whole) and attempts are whole.
func TestDriverScopeIsTheRunsScope(t *testing.T) {
	pb, err := spec.Parse("d.yaml", []byte("metadata: {name: d}\nworkload: {shards: 4, name: x}\nworkflow:\n  - {step: a}\n"))
	require.NoError(t, err)
	var scope map[string]any
	require.NoError(t, json.Unmarshal([]byte(`{"workload": {"shards": 4}, "steps": {"a": {"status": "completed", "attempts": 2, "result": 1}}, "execution_id": "d-1"}`), &scope))
	got := DriverScope(pb, scope, map[string]any{"name": "y"})
	require.Equal(t, map[string]any{"shards": 4, "name": "y"}, got["workload"])
	require.Equal(t, 2, got["steps"].(map[string]any)["a"].(map[string]any)["attempts"])
	require.Equal(t, 2.0, scope["steps"].(map[string]any)["a"].(map[string]any)["attempts"], "the input is not changed")
}
