package interpreter

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A tool's render reads the steps its templates name, and every step when
// one reads `steps` by a computed key.
func TestRenderReadsWhatItNames(t *testing.T) {
	pb, err := Parse("r.yaml", []byte(`metadata: {name: r}
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
	spec, err := run.RenderTool(pb.Step("e"))
	require.NoError(t, err)
	require.Equal(t, 1, spec["result"], "$env reads every step")
	spec, err = run.RenderTool(pb.Step("c"))
	require.NoError(t, err)
	require.Equal(t, "1+2", spec["result"])
	spec, err = run.RenderTool(pb.Step("d"))
	require.NoError(t, err)
	require.Equal(t, 1, spec["result"])
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
	pb, err := Parse("wide.yaml", []byte(b.String()))
	require.NoError(t, err)
	run := NewRun(pb, nil, "wide-1", time.Now)
	for _, s := range run.Ready() {
		switch s.Name {
		case "s007":
			run.Fail(s.Name, &StepError{Type: ErrExitCode, Message: "exited with code 3"}, 1)
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
