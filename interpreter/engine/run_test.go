package engine

import (
	"maps"
	"slices"
	"testing"
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"

	"github.com/stretchr/testify/require"
)

func TestRetryReusesCompletedSteps(t *testing.T) {
	src := `metadata: {name: t}
failure_mode: continue
workflow:
  - step: extract
    tool: {kind: noop}
    next:
      - {when: "steps.extract.result == 'rows'", then: [transform]}
      - else: [end]
  - {step: transform, tool: {kind: noop}, next: load}
  - {step: load, tool: {kind: noop}}
  - {step: audit, tool: {kind: noop}}
`
	pb, err := spec.Parse("t.yaml", []byte(src))
	require.NoError(t, err)
	earlier := map[string]*contract.StepState{
		"extract":   {Status: contract.StatusCompleted, Result: "rows", Attempts: 2},
		"transform": {Status: contract.StatusFailed},
		"load":      {Status: contract.StatusSkipped},
		"audit":     {Status: contract.StatusCompleted, Result: "ok"},
		"end":       {Status: contract.StatusCompleted},
	}
	reuse, err := ReusableSteps(pb, earlier, "")
	require.NoError(t, err)
	require.Equal(t, []string{"audit", "extract"}, slices.Sorted(maps.Keys(reuse)))

	run := NewRun(pb, nil, "t-2", time.Now)
	run.Reuse(reuse)
	require.Equal(t, []string{"transform"}, names(run.Ready()), "only what did not complete runs, its branch taken as before")
	require.Equal(t, contract.StatusReused, run.State("extract").Status)
	require.Equal(t, "rows", run.State("extract").Result)
	run.Settle("transform", contract.Outcome{Result: 1, Attempts: 1})
	require.Equal(t, []string{"load"}, names(run.Ready()))
	run.Settle("load", contract.Outcome{Result: 1, Attempts: 1})
	run.Ready()
	run.StartEnd()
	require.Equal(t, contract.RunCompleted, run.Finish(nil, nil, 0).Status)

	reuse, err = ReusableSteps(pb, earlier, "extract")
	require.NoError(t, err)
	require.Equal(t, []string{"audit"}, slices.Sorted(maps.Keys(reuse)), "--step reruns the step and everything downstream")
	_, err = ReusableSteps(pb, earlier, "nope")
	require.EqualError(t, err, `no step "nope" to retry from in playbook t`)
	require.Equal(t, []string{"extract", "transform", "load", "end"}, pb.Downstream("extract"))
}
