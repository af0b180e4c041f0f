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
