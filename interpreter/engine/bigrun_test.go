package engine

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"

	"github.com/stretchr/testify/require"
)

// A tool's render reads the steps its templates name, and every step when
// one reads `steps` by a computed key.
func TestRenderReadsWhatItNames(t *testing.T) {
	pb, err := spec.Parse("r.yaml", []byte(`metadata: {name: r}
workload: {pick: b}
workflow:
  - {step: a, tool: {kind: noop, result: 1}, next: c}
  - {step: b, tool: {kind: noop, result: 2}, next: c}
  - step: c
    tool: {kind: noop, result: "{{ steps.a.result }}+{{ steps[workload.pick].result }}"}
  - step: d
    depends_on: [a]
    tool: {kind: noop, result: "{{ steps.a.result }}"}
  - step: e
    depends_on: [a]
    tool: {kind: noop, result: "{{ $env.steps.a.result }}"}
`))
	require.NoError(t, err)
	run := NewRun(pb, nil, "r-1", time.Now)
	for _, s := range run.Ready() {
		run.Complete(s.Name, map[string]any{"a": 1, "b": 2}[s.Name], 1)
	}
	ready := run.Ready()
	require.Len(t, ready, 3)
	toolSpec, err := run.RenderTool(pb.Step("e"))
	require.NoError(t, err)
	require.Equal(t, 1, toolSpec["result"], "$env reads every step")
	toolSpec, err = run.RenderTool(pb.Step("c"))
	require.NoError(t, err)
	require.Equal(t, "1+2", toolSpec["result"])
	toolSpec, err = run.RenderTool(pb.Step("d"))
	require.NoError(t, err)
	require.Equal(t, 1, toolSpec["result"])
	require.Equal(t, []string{"a"}, keysOf(run.envReading(run.toolReads(pb.Step("d")))["steps"]))
}

// The Web UI's step table of a long playbook shows the steps that need a
// look, and counts the others.
func TestDetailsOfALongPlaybook(t *testing.T) {
	var b strings.Builder
	b.WriteString("metadata: {name: wide}\nworkflow:\n")
	for i := range 300 {
		fmt.Fprintf(&b, "  - {step: s%03d, tool: {kind: shell, command: \"true\"}}\n", i)
	}
	pb, err := spec.Parse("wide.yaml", []byte(b.String()))
	require.NoError(t, err)
	run := NewRun(pb, nil, "wide-1", time.Now)
	for _, s := range run.Ready() {
		switch s.Name {
		case "s007":
			run.Fail(s.Name, &contract.StepError{Type: contract.ErrExitCode, Message: "exited with code 3"}, 1)
		case "s100", "s299":
		default:
			run.Complete(s.Name, nil, 1)
		}
	}
	require.Equal(t, "**playbook wide**\n\n| step | status | attempts | note |\n| --- | --- | --- | --- |\n"+
		"| s007 | failed | 1 | exit_code: exited with code 3 (routed to end) |\n"+
		"| s100 | running | 0 |  |\n"+
		"| s299 | running | 0 |  |\n"+
		"\n298 of 301 steps not shown: 297 completed, 1 pending.\n", run.DetailsMarkdown())
}

// A step handed out by Ready but still waiting for a slot is withdrawn,
// skipped with Ready's own reason, once a failure stops the run or the
// run is drained; a cleanup step with on_failure: run still starts.
func TestWithdrawAStepThatWaitsForASlot(t *testing.T) {
	pb, err := spec.Parse("w.yaml", []byte(`metadata: {name: w}
workflow:
  - {step: a, tool: {kind: shell, command: "true"}}
  - {step: b, tool: {kind: shell, command: "true"}}
  - {step: c, tool: {kind: shell, command: "true"}, on_failure: run}
`))
	require.NoError(t, err)
	run := NewRun(pb, nil, "w-1", time.Now)
	require.Len(t, run.Ready(), 3)
	require.False(t, run.Withdraw(pb.Step("b")), "nothing stops the run yet")
	run.Fail("a", &contract.StepError{Type: contract.ErrExitCode, Message: "exited with code 1"}, 1)
	require.True(t, run.Withdraw(pb.Step("b")))
	require.Equal(t, contract.StatusSkipped, run.State("b").Status)
	require.Equal(t, "not started: a failed and failure_mode is stop", run.State("b").SkipReason)
	require.False(t, run.Withdraw(pb.Step("c")), "on_failure: run")
	run.Complete("c", nil, 1)
	require.True(t, run.EndReady())

	drained := NewRun(pb, nil, "w-2", time.Now)
	drained.Ready()
	drained.Drain()
	require.True(t, drained.Withdraw(pb.Step("c")))
	require.Equal(t, "run drained: no new step starts", drained.State("c").SkipReason)
}
