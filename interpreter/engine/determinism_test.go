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
	"playbook/interpreter/spec/expr"

	"github.com/stretchr/testify/require"
)

// twentyKeys is a map whose Go iteration order changes from one range to
// the next.
func twentyKeys() (map[string]any, []any) {
	m := map[string]any{}
	var sorted []any
	for i := 1; i <= 20; i++ {
		k := fmt.Sprintf("k%02d", i)
		m[k] = i
		sorted = append(sorted, k)
	}
	return m, sorted
}

func TestMapBuiltinsAreSortedByKey(t *testing.T) {
	m, sorted := twentyKeys()
	env := map[string]any{"workload": map[string]any{"m": m}, "steps": map[string]any{}, "execution_id": "e", "playbook": map[string]any{}}
	keys, err := expr.CompileExpr("keys(workload.m)", expr.ScopeStep, false)
	require.NoError(t, err)
	values, err := expr.CompileExpr("values(workload.m)", expr.ScopeStep, false)
	require.NoError(t, err)
	pairs, err := expr.CompileExpr("toPairs(workload.m)[0][0] + '=' + string(toPairs(workload.m)[19][1])", expr.ScopeStep, false)
	require.NoError(t, err)
	for range 20 {
		got, err := keys.Eval(env)
		require.NoError(t, err)
		require.Equal(t, sorted, got)
		got, err = values.Eval(env)
		require.NoError(t, err)
		require.Equal(t, 1, got.([]any)[0])
		require.Equal(t, 20, got.([]any)[19])
		got, err = pairs.Eval(env)
		require.NoError(t, err)
		require.Equal(t, "k01=20", got)
	}
	_, err = keys.Eval(map[string]any{"workload": map[string]any{"m": 3}, "steps": map[string]any{}, "execution_id": "e", "playbook": map[string]any{}})
	require.ErrorContains(t, err, "keys takes a map, not int")
}

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

func TestSubmitChecks(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"attempts over the bound", `
metadata: {name: x}
workflow:
  - {step: a, tool: {kind: shell, command: "true"}, retry: 3000000000}
`, `x.yaml:4: step "a": retry: a step makes at most 1000000 attempts; this asks for 3000000000`},
		{"max_attempts over the bound", `
metadata: {name: x}
workflow:
  - step: a
    tool: {kind: shell, command: "true"}
    retry: {max_attempts: 1000001}
`, `x.yaml:6: step "a": retry.max_attempts: a step makes at most 1000000 attempts; this asks for 1000001`},
		{"retries over the bound", `
metadata: {name: x}
workflow:
  - {step: a, tool: {kind: shell, command: "true"}, retries: 1000000}
`, `x.yaml:4: step "a": retries: a step makes at most 1000000 attempts; this asks for 1000001`},
		{"max_retries over the bound", `
metadata: {name: x}
failure_handlers:
  - name: h
    rules: [{match_all_exit_codes: true, max_retries: 3000000000}]
workflow:
  - {step: a, tool: {kind: shell, command: "true"}, failure_handler: h}
`, `x.yaml:5: max_retries: a step makes at most 1000000 attempts; this asks for 3000000001`},
		{"workload keys that read alike", `
metadata: {name: x}
workload:
  1: one
  1.0: uno
workflow:
  - {step: a}
`, `x.yaml:5: workload: keys 1 (line 4) and 1.0 are the same key "1" once read: write it once`},
		{"nested tool keys that read alike", `
metadata: {name: x}
workflow:
  - step: a
    tool:
      kind: noop
      result: {flags: {true: 1, True: 2}}
`, `x.yaml:7: step "a": result: keys true (line 7) and True are the same key "true" once read: write it once`},
		{"a playbook tool in a loop", `
metadata: {name: x}
workflow:
  - step: a
    loop: {in: [1, 2]}
    tool: {kind: playbook, path: sub.yaml}
`, `x.yaml:4: step "a": a playbook tool cannot run in a loop: write the loop inside the sub-playbook, or list its runs as steps`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pb, err := spec.Parse("x.yaml", []byte(tc.src))
			require.NoError(t, err, "a frozen playbook still parses: runs in flight keep replaying")
			require.EqualError(t, pb.CheckSubmit(), tc.want)
		})
	}
	pb, err := spec.Parse("x.yaml", []byte("metadata: {name: x}\nworkflow:\n  - {step: a, retry: 1000000, tool: {kind: shell, command: 'true'}}\n"))
	require.NoError(t, err)
	require.NoError(t, pb.CheckSubmit(), "the bound itself is allowed")
}

// Keys written alike (1 and "1") were already refused by the YAML decoder;
// the error is now one line.
func TestKeysWrittenAlikeAreOneLineErrors(t *testing.T) {
	_, err := spec.Parse("x.yaml", []byte("metadata: {name: x}\nworkload:\n  1: one\n  \"1\": uno\nworkflow:\n  - {step: a}\n"))
	require.EqualError(t, err, `x.yaml:4: workload: keys 1 (line 3) and "1" are the same key "1" once read: write it once`)
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
