package engine

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
)

// Reading past a stub (a result over its budget, of which only
// {truncated, bytes, budget, full_in} was kept) is an error that says the
// value was cut: a field the stub has not, an index, its length, a
// condition on it, and inputs.from of a loop whose files list went with
// its result. Runs from before the change "truncated-reads" read the stub
// (null, 4, no file), and their replays still do; the version is asked
// only when a read past a stub happens, and the stub's own fields read as
// ever.
func TestReadsPastAStub(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
workflow:
  - {step: big, tool: {kind: shell, command: x}, outputs: {files: [x.txt]}, next: [field, length, own, cond, from, quiet, first]}
  - {step: field, tool: {kind: noop, result: "{{ steps.big.result.json.n }}"}}
  - {step: length, tool: {kind: noop, result: "{{ len(steps.big.result.json) }}"}}
  - {step: own, tool: {kind: noop, result: "{{ steps.big.result.json.truncated }}"}}
  - step: cond
    tool: {kind: noop}
    next: [{when: "steps.big.result.json.ok == true", then: field}]
  - {step: from, tool: {kind: shell, command: x}, inputs: {from: [big]}}
  - {step: quiet, tool: {kind: noop, result: "{{ steps.big.result.json?.n }}"}}
  - {step: first, tool: {kind: noop, result: "{{ filter(steps.big.result.rows, .x.y == 1)[0].id }}"}}
`))
	require.NoError(t, err)
	stub := expr.Truncated(3<<20, 1<<20, "the step's stdout log")
	runWith := func(old *int) *Run {
		var opts []RunOption
		if old != nil {
			opts = append(opts, WithTruncatedReads(func() bool { *old++; return false }))
		}
		run := NewRun(pb, nil, "t-1", time.Now, opts...)
		run.Ready()
		run.Settle("big", contract.Outcome{Result: map[string]any{"exit_code": 0, "stdout": "{", "stderr": "", "json": stub}, Attempts: 1})
		return run
	}

	run := runWith(nil)
	_, err = run.RenderTool(pb.Step("field"))
	require.ErrorContains(t, err, `"steps.big.result.json.n": reads n of a value that was cut: only its stub was kept`)
	require.ErrorContains(t, err, "(steps.big.result.json was truncated: 3 MiB, over the budget of 1 MiB; see its full_in)")
	_, err = run.RenderTool(pb.Step("length"))
	require.ErrorContains(t, err, "reads the length of a value that was cut")
	out, err := run.RenderTool(pb.Step("own"))
	require.NoError(t, err)
	require.Equal(t, true, out["result"], "the stub's own fields read as ever")
	_, err = run.evalBool(pb.Step("cond").Next[0].When, run.Env())
	require.ErrorContains(t, err, "reads ok of a value that was cut")
	_, err = run.RenderTool(pb.Step("quiet"))
	require.ErrorContains(t, err, "reads n of a value that was cut", "?. of a stub reads past it too")

	// A result that holds a stub elsewhere reads as written otherwise:
	// filter()[0] stops at the first match, as expr-lang's find does,
	// where an element after it would fail.
	run.Settle("big", contract.Outcome{Result: map[string]any{"json": stub, "rows": []any{
		map[string]any{"id": "first", "x": map[string]any{"y": 1.0}}, map[string]any{"id": "second", "x": nil}}}, Attempts: 1})
	out, err = run.RenderTool(pb.Step("first"))
	require.NoError(t, err)
	require.Equal(t, "first", out["result"])

	// A loop over its result budget: its result a stub, its files list gone.
	run.Settle("big", contract.Outcome{Result: stub, Attempts: 1})
	_, err = run.RenderFiles(pb.Step("from"))
	require.EqualError(t, err, "inputs.from: steps.big's files were not kept: its result was truncated (3 MiB, over its budget of 1 MiB), and its files list with it; "+
		"they are in the store (playbook files RUN big): keep its results within the budget (smaller results of each element)")

	// A run from before the change reads the stub.
	asked := 0
	run = runWith(&asked)
	out, err = run.RenderTool(pb.Step("own"))
	require.NoError(t, err)
	require.Equal(t, true, out["result"])
	require.Zero(t, asked, "the version is asked only when a read goes past a stub")
	out, err = run.RenderTool(pb.Step("field"))
	require.NoError(t, err)
	require.Nil(t, out["result"])
	out, err = run.RenderTool(pb.Step("length"))
	require.NoError(t, err)
	require.Equal(t, 4, out["result"])
	ok, err := run.evalBool(pb.Step("cond").Next[0].When, run.Env())
	require.NoError(t, err)
	require.False(t, ok)
	run.Settle("big", contract.Outcome{Result: stub, Attempts: 1})
	files, err := run.RenderFiles(pb.Step("from"))
	require.NoError(t, err)
	require.Empty(t, files.Inputs)
	require.Positive(t, asked)
}

// A loop whose items are stubs: in the run (a loop of up to a batch, or
// of noop elements) and in a loop's driver (longer), the same template
// reads past the same stub.
func TestALoopsItemsReadPastAStubInTheRunAsInTheDriver(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
workflow:
  - {step: a, tool: {kind: shell, command: x}, next: [l]}
  - step: l
    loop: {in: "steps.a.result.rows"}
    tool: {kind: noop, result: "{{ item.x }}"}
`))
	require.NoError(t, err)
	stub := expr.Truncated(3<<20, 1<<20, "somewhere")
	run := NewRun(pb, nil, "t-1", time.Now)
	run.Ready()
	run.Settle("a", contract.Outcome{Result: map[string]any{"rows": []any{stub}}, Attempts: 1})
	s := pb.Step("l")
	items, err := run.LoopItems(s)
	require.NoError(t, err)

	// In the run (RenderLoop, decideInWorkflow).
	specs, errRun := run.RenderLoop(s, items)
	// In the driver: its scope as it travels (JSON), as PlaybookLoop reads it.
	b, _ := json.Marshal(run.LoopScope(s))
	var scope map[string]any
	require.NoError(t, json.Unmarshal(b, &scope))
	scope = DriverScope(pb, scope, nil)
	_, errDriver := RenderElement(pb, s, scope, items, 0, ScopeStubs(scope, nil))
	require.Nil(t, specs)
	require.ErrorContains(t, errRun, "reads x of a value that was cut")
	require.ErrorContains(t, errDriver, "reads x of a value that was cut", "the run and the driver read the same stub alike")
}

// An upstream run's aggregate (trigger.result) holds its stubs: a read
// past one is as much a read past a stub as one of a step's result.
func TestATriggersResultReadPastAStub(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
triggers:
  - after: {playbook: up}
workflow:
  - {step: n, tool: {kind: noop, result: "{{ trigger.result.steps.build.result.json.version }}"}}
`))
	require.NoError(t, err)
	stub := map[string]any{"truncated": true, "bytes": 3145728.0, "budget": 1048576.0, "full_in": "x"}
	trig := map[string]any{"kind": "after", "result": map[string]any{"steps": map[string]any{"build": map[string]any{"result": map[string]any{"json": stub}}}}}
	run := NewRun(pb, nil, "t-1", time.Now, WithTrigger(trig))
	_, err = run.RenderTool(pb.Step("n"))
	require.ErrorContains(t, err, "reads version of a value that was cut", "reading past the upstream's stub is an error")
}

// A failed step's error details can hold a stub (retry_when's result).
func TestAnErrorsDetailsReadPastAStub(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
workflow:
  - {step: poll, tool: {kind: shell, command: x}, allow_failure: true, next: [n]}
  - {step: n, tool: {kind: noop, result: "{{ steps.poll.error.details.result.json.version }}"}}
`))
	require.NoError(t, err)
	stub := expr.Truncated(3<<20, 1<<20, "stdout")
	run := NewRun(pb, nil, "t-1", time.Now)
	run.Ready()
	run.Settle("poll", contract.Outcome{Err: &contract.StepError{Type: contract.ErrRetryWhen, Message: "retry_when is true", Details: map[string]any{"result": map[string]any{"json": stub}}}, Attempts: 3})
	_, err = run.RenderTool(pb.Step("n"))
	require.ErrorContains(t, err, "reads version of a value that was cut", "reading past the stub in the error's details is an error")
}
