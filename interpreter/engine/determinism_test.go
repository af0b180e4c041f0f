package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"

	"github.com/stretchr/testify/require"
)

// Of several templates that fail, the one reported is the first by key,
// every time: the message reaches steps.X.error, which a when can read.
func TestRenderReportsTheFirstFailingKey(t *testing.T) {
	var env strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&env, "        V%02d: \"{{ int(workload.bad%02d) }}\"\n", i, i)
	}
	var workload strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&workload, "  bad%02d: x%02d\n", i, i)
	}
	src := "metadata: {name: t}\nworkload:\n" + workload.String() + "workflow:\n  - step: s\n    tool:\n      kind: shell\n      command: env\n      env:\n" + env.String()
	pb, err := spec.Parse("t.yaml", []byte(src))
	require.NoError(t, err)
	for range 20 {
		run := NewRun(pb, nil, "t-1", time.Now)
		_, err := run.RenderTool(run.Ready()[0])
		require.ErrorContains(t, err, "int(workload.bad01)")
	}
}

func TestWorkloadOverridesDeepMerge(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
workload:
  db: {host: localhost, port: 5432, opts: {ssl: true, timeout: 5}}
  tags: [a, b]
workflow:
  - {step: s, tool: {kind: noop, result: "{{ workload }}"}}
`))
	require.NoError(t, err)
	over := map[string]any{"db": map[string]any{"host": "x", "opts": map[string]any{"timeout": 9}}, "tags": []any{"c"}}
	run := NewRun(pb, over, "t-1", time.Now)
	toolSpec, err := run.RenderTool(run.Ready()[0])
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"db":   map[string]any{"host": "x", "port": 5432, "opts": map[string]any{"ssl": true, "timeout": 9}},
		"tags": []any{"c"},
	}, toolSpec["result"])
	require.Equal(t, "localhost", pb.Workload["db"].(map[string]any)["host"], "the defaults are not changed")
	require.True(t, spec.MergesDeep(pb.Workload, over))
	require.False(t, spec.MergesDeep(pb.Workload, map[string]any{"tags": []any{}}))

	old := NewRun(pb, over, "t-1", time.Now, WithShallowWorkload())
	toolSpec, err = old.RenderTool(old.Ready()[0])
	require.NoError(t, err)
	require.Equal(t, map[string]any{"host": "x", "opts": map[string]any{"timeout": 9}}, toolSpec["result"].(map[string]any)["db"], "runs from before replace key by key")
}

// Runs started before arcs were kept per kind count only the arc declared
// first in the file.
func TestFirstArcOnlyForOldRuns(t *testing.T) {
	src := `metadata: {name: t}
workflow:
  - step: a
    next:
      - {when: "false", then: [b]}
  - {step: b, depends_on: [a], tool: {kind: noop}}
`
	pb, err := spec.Parse("t.yaml", []byte(src))
	require.NoError(t, err)
	require.True(t, pb.HasArcsOfBothKinds())
	run := NewRun(pb, nil, "t-1", time.Now, WithFirstArcOnly())
	require.Equal(t, []string{"a"}, names(run.Ready()))
	run.Complete("a", nil, 0)
	require.Empty(t, names(run.Ready()))
	require.Equal(t, contract.StatusSkipped, run.State("b").Status)

	run = NewRun(pb, nil, "t-1", time.Now)
	run.Ready()
	run.Complete("a", nil, 0)
	require.Equal(t, []string{"b"}, names(run.Ready()))
}

// A retry reuses a step with the arcs its run took: its when, read again in
// the new run (where the reused step has made no attempt), would flip.
func TestReusedStepKeepsItsArcs(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
workflow:
  - step: a
    tool: {kind: noop}
    next:
      - {when: "steps.a.attempts > 1", then: [slow]}
      - else: [fast]
  - {step: slow, tool: {kind: noop}}
  - {step: fast, tool: {kind: noop}}
`))
	require.NoError(t, err)
	first := NewRun(pb, nil, "t-1", time.Now)
	first.Ready()
	first.Complete("a", "ok", 2)
	require.Equal(t, []string{"slow"}, first.State("a").TakenNext)
	first.Settle("slow", contract.Outcome{Err: &contract.StepError{Type: "exit_code", Message: "boom"}, Attempts: 1})
	first.Ready()
	first.StartEnd()
	earlier := first.Finish(nil, nil, 0).Steps

	for _, from := range []string{"", "slow"} {
		reuse, err := ReusableSteps(pb, earlier, from)
		require.NoError(t, err)
		require.Equal(t, []string{"a"}, slices.Sorted(maps.Keys(reuse)))
		retry := NewRun(pb, nil, "t-2", time.Now)
		retry.Reuse(reuse)
		require.Equal(t, []string{"slow"}, names(retry.Ready()), "retry --step %q", from)
		require.Equal(t, contract.StatusSkipped, retry.State("fast").Status)
	}

	// An aggregate from before taken_next: the when is evaluated again.
	legacy := map[string]*contract.StepState{"a": {Status: contract.StatusCompleted, Result: "ok", Attempts: 2}}
	retry := NewRun(pb, nil, "t-2", time.Now)
	retry.Reuse(legacy)
	require.Equal(t, []string{"fast"}, names(retry.Ready()))
}

// A cleanup with on_failure: run after a failed step is not reused: the
// failed step runs again, and the cleanup after it.
func TestRetryRunsACleanupAgainAfterItsFailedUpstream(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
workflow:
  - {step: download, tool: {kind: noop}, next: transform}
  - {step: transform, tool: {kind: noop}, next: load}
  - {step: load, tool: {kind: noop}}
  - {step: cleanup, depends_on: [download, transform, load], on_failure: run, tool: {kind: noop}}
  - {step: report, depends_on: [cleanup], tool: {kind: noop}}
  - {step: side, tool: {kind: noop}}
`))
	require.NoError(t, err)
	failed := "transform"
	earlier := map[string]*contract.StepState{
		"download":  {Status: contract.StatusCompleted, TakenNext: []string{"transform"}},
		"transform": {Status: contract.StatusFailed, OriginalFailedStep: &failed},
		"load":      {Status: contract.StatusSkipped, OriginalFailedStep: &failed},
		"cleanup":   {Status: contract.StatusCompleted, TakenNext: []string{}},
		"report":    {Status: contract.StatusCompleted, TakenNext: []string{}},
		"side":      {Status: contract.StatusCompleted, TakenNext: []string{}},
	}
	reuse, err := ReusableSteps(pb, earlier, "")
	require.NoError(t, err)
	require.Equal(t, []string{"download", "side"}, slices.Sorted(maps.Keys(reuse)))
	run := NewRun(pb, nil, "t-2", time.Now)
	run.Reuse(reuse)
	require.Equal(t, []string{"transform"}, names(run.Ready()))
	run.Complete("transform", nil, 1)
	require.Equal(t, []string{"load"}, names(run.Ready()))
	run.Complete("load", nil, 1)
	require.Equal(t, []string{"cleanup"}, names(run.Ready()), "the cleanup runs again, after the step it cleans up after")
}

func TestCancelReasonIsRecorded(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte("metadata: {name: t}\nworkflow:\n  - {step: a, tool: {kind: noop}}\n"))
	require.NoError(t, err)
	run := NewRun(pb, nil, "t-1", time.Now)
	run.Ready()
	run.RecordCancelReason("maintenance window")
	require.Empty(t, run.Snapshot().CancelReason, "a reason without a cancel is no cancel")
	run.CancelRun("cancel requested")
	ev := run.Events()[len(run.Events())-1]
	require.Equal(t, "cancel_requested", ev.Type)
	require.Equal(t, "cancel requested: maintenance window", ev.Message)
	require.Equal(t, map[string]any{"cancel_reason": "maintenance window"}, ev.Data)
	require.Equal(t, "maintenance window", run.Snapshot().CancelReason)
	run.cancel("a", &contract.StepError{Type: contract.ErrCancelled}, 1)
	run.StartEnd()
	agg := run.Finish(nil, nil, 0)
	require.Equal(t, contract.RunCancelled, agg.Status)
	require.Equal(t, "maintenance window", agg.CancelReason)
}
