package engine

import (
	"testing"
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"

	"github.com/stretchr/testify/require"
)

func TestLoopItemsAndRendering(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
workload: {files: [a.csv, b.csv]}
workflow:
  - step: each
    loop: {in: "workload.files", iterator: file, mode: parallel, max_in_flight: 4}
    tool: {kind: noop, result: "{{ loop.index }}/{{ loop.length }}: {{ file }}"}
  - step: literal
    loop: {in: [1, 2, 3]}
    tool: {kind: noop, result: "{{ item * 10 }}"}
  - step: range
    loop: {in: "1..3"}
    tool: {kind: noop, result: "{{ item }}"}
`))
	require.NoError(t, err)
	each := pb.Step("each")
	require.Equal(t, &spec.Loop{In: each.Loop.In, Iterator: "file", Parallel: true, MaxInFlight: 4}, each.Loop)
	require.Equal(t, 1, pb.Step("literal").Loop.MaxInFlight, "sequential by default")
	run := NewRun(pb, nil, "t-1", time.Now)

	items, err := run.LoopItems(each)
	require.NoError(t, err)
	specs, err := run.RenderLoop(each, items)
	require.NoError(t, err)
	require.Equal(t, []map[string]any{{"result": "0/2: a.csv"}, {"result": "1/2: b.csv"}}, specs)

	items, err = run.LoopItems(pb.Step("literal"))
	require.NoError(t, err)
	specs, err = run.RenderLoop(pb.Step("literal"), items)
	require.NoError(t, err)
	require.Equal(t, 30, specs[2]["result"])

	items, err = run.LoopItems(pb.Step("range"))
	require.NoError(t, err)
	require.Equal(t, []any{1, 2, 3}, items, "any list an expression gives")
}

func TestLoopItemsMustBeAList(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte("metadata: {name: t}\nworkflow:\n  - {step: s, loop: {in: \"42\"}, tool: {kind: noop}}\n"))
	require.NoError(t, err)
	_, err = NewRun(pb, nil, "t-1", time.Now).LoopItems(pb.Step("s"))
	require.EqualError(t, err, `loop.in "42" gave int, not a list`)
}

func TestCombineLoop(t *testing.T) {
	ok := func(v any, attempts int) contract.Outcome { return contract.Outcome{Result: v, Attempts: attempts} }
	fail := contract.Outcome{Err: &contract.StepError{Type: "exit_code", Message: "boom"}, Attempts: 3, Recovery: contract.RecoveryNoHandler}
	cancelled := contract.Outcome{Err: &contract.StepError{Type: contract.ErrCancelled, Message: "x"}, Attempts: 1}

	got := CombineLoop([]contract.Outcome{ok("a", 1), ok("b", 2)})
	require.Nil(t, got.Err)
	require.Equal(t, []any{"a", "b"}, got.Result, "results in input order")
	require.Equal(t, 2, got.Attempts)

	got = CombineLoop([]contract.Outcome{ok("a", 1), cancelled, fail, fail})
	require.Equal(t, "exit_code", got.Err.Type)
	require.Equal(t, "element 3 of 4 (index 2) failed: boom", got.Err.Message)
	require.Equal(t, 2, got.Err.Details.(map[string]any)["failed_elements"])
	require.Equal(t, contract.RecoveryNoHandler, got.Recovery)
	require.Nil(t, got.Result)

	got = CombineLoop([]contract.Outcome{ok("a", 1), cancelled})
	require.Equal(t, contract.ErrCancelled, got.Err.Type)
}
