package interpreter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// scripted is a step's outcome in a simulated run: a result, or a failure.
type scripted struct {
	result any
	fail   string // error type; empty: the step completes
}

// simulate drives a Run the way the workflow does: it starts every ready
// step as one batch, then settles the batch in file order, so steps in one
// batch are "running together". It returns the aggregate and the order in
// which steps started.
func simulate(t *testing.T, src string, outcomes map[string]scripted) (*Aggregate, []string) {
	t.Helper()
	pb, err := Parse("t.yaml", []byte(src))
	require.NoError(t, err)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	run := NewRun(pb, nil, "t-1", func() time.Time { return clock })
	var started []string
	for {
		ready := run.Ready()
		if run.EndReady() {
			break
		}
		require.NotEmpty(t, ready, "stalled with %v running", run.Running())
		for _, s := range ready {
			started = append(started, s.Name)
		}
		for _, s := range ready {
			o := outcomes[s.Name]
			if o.fail != "" {
				run.Fail(s.Name, &StepError{Type: o.fail, Message: "boom"}, 1)
			} else {
				run.Complete(s.Name, o.result, 1)
			}
		}
	}
	run.StartEnd()
	return run.Finish(nil, nil, 0), started
}

func statuses(agg *Aggregate) map[string]Status {
	out := map[string]Status{}
	for name, st := range agg.Steps {
		out[name] = st.Status
	}
	return out
}

func TestRunDecisions(t *testing.T) {
	cases := []struct {
		name      string
		src       string
		outcomes  map[string]scripted
		status    string
		statuses  map[string]Status
		started   []string
		skipWhy   map[string]string
		failedCnt int
	}{
		{
			name: "sequential chain completes",
			src: `metadata: {name: t}
workflow:
  - {step: a, tool: {kind: noop}, next: b}
  - {step: b, tool: {kind: noop}, next: c}
  - {step: c, tool: {kind: noop}}
`,
			status:   RunCompleted,
			statuses: map[string]Status{"a": StatusCompleted, "b": StatusCompleted, "c": StatusCompleted, "end": StatusCompleted},
			started:  []string{"a", "b", "c"},
		},
		{
			name: "when picks a branch, the other is skipped",
			src: `metadata: {name: t}
workflow:
  - step: a
    tool: {kind: noop}
    next:
      - {when: "steps.a.result.rows > 0", then: [load]}
      - else: [idle]
  - {step: load, tool: {kind: noop}}
  - {step: idle, tool: {kind: noop}}
`,
			outcomes: map[string]scripted{"a": {result: map[string]any{"rows": 3.0}}},
			status:   RunCompleted,
			statuses: map[string]Status{"a": StatusCompleted, "load": StatusCompleted, "idle": StatusSkipped, "end": StatusCompleted},
			skipWhy:  map[string]string{"idle": "no branch led here"},
		},
		{
			name: "else is taken when no when holds, skipping propagates",
			src: `metadata: {name: t}
workflow:
  - step: a
    tool: {kind: noop}
    next:
      - {when: "steps.a.result.rows > 0", then: [load]}
      - else: [end]
  - {step: load, tool: {kind: noop}, next: index}
  - {step: index, tool: {kind: noop}}
`,
			outcomes: map[string]scripted{"a": {result: map[string]any{"rows": 0.0}}},
			status:   RunCompleted,
			statuses: map[string]Status{"a": StatusCompleted, "load": StatusSkipped, "index": StatusSkipped, "end": StatusCompleted},
		},
		{
			name: "fan out runs branches together, join waits for all",
			src: `metadata: {name: t}
workflow:
  - {step: start, next: [x, y, z]}
  - {step: x, tool: {kind: noop}}
  - {step: y, tool: {kind: noop}}
  - {step: z, tool: {kind: noop}}
  - {step: join, depends_on: [x, y, z], tool: {kind: noop}}
`,
			status:  RunCompleted,
			started: []string{"start", "x", "y", "z", "join"},
		},
		{
			name: "a join reached by any taken branch runs",
			src: `metadata: {name: t}
workflow:
  - step: a
    next:
      - {when: "false", then: [left]}
      - else: [right]
  - {step: left, tool: {kind: noop}, next: join}
  - {step: right, tool: {kind: noop}, next: join}
  - {step: join, tool: {kind: noop}}
`,
			status:   RunCompleted,
			statuses: map[string]Status{"a": StatusCompleted, "left": StatusSkipped, "right": StatusCompleted, "join": StatusCompleted, "end": StatusCompleted},
		},
		{
			name: "continue: dependants skipped, other branch and on_failure run still go",
			src: `metadata: {name: t}
failure_mode: continue
workflow:
  - {step: prep, tool: {kind: noop}, next: [transform, audit]}
  - {step: transform, tool: {kind: noop}, next: report}
  - {step: audit, tool: {kind: noop}}
  - {step: report, tool: {kind: noop}, next: publish}
  - {step: publish, tool: {kind: noop}}
  - {step: cleanup, depends_on: [publish], on_failure: run, tool: {kind: noop}}
`,
			outcomes:  map[string]scripted{"transform": {fail: "exit_code"}},
			status:    RunFailed,
			failedCnt: 1,
			statuses: map[string]Status{"prep": StatusCompleted, "transform": StatusFailed, "audit": StatusCompleted,
				"report": StatusSkipped, "publish": StatusSkipped, "cleanup": StatusCompleted, "end": StatusCompleted},
			skipWhy: map[string]string{"report": "upstream transform failed", "publish": "upstream report skipped after transform failed"},
		},
		{
			name: "stop: running steps finish, nothing new starts, on_failure run still runs",
			src: `metadata: {name: t}
workflow:
  - {step: a, tool: {kind: noop}}
  - {step: b, tool: {kind: noop}, next: [c, d]}
  - {step: c, tool: {kind: noop}}
  - {step: d, on_failure: run, tool: {kind: noop}}
`,
			outcomes:  map[string]scripted{"a": {fail: "exit_code"}},
			status:    RunFailed,
			failedCnt: 1,
			statuses:  map[string]Status{"a": StatusFailed, "b": StatusCompleted, "c": StatusSkipped, "d": StatusCompleted, "end": StatusCompleted},
			skipWhy:   map[string]string{"c": "not started: a failed and failure_mode is stop"},
			started:   []string{"a", "b", "d"},
		},
		{
			name: "success_when tolerates one failure",
			src: `metadata: {name: t}
failure_mode: continue
workflow:
  - {step: a, tool: {kind: noop}}
  - {step: b, tool: {kind: noop}}
  - {step: end, success_when: "failed_steps_count <= 1 && total_steps == 2"}
`,
			outcomes:  map[string]scripted{"b": {fail: "http_status"}},
			status:    RunCompleted,
			failedCnt: 1,
		},
		{
			name: "depends_on and a conditional next from the same step: depends_on holds (next first in the file)",
			src: `metadata: {name: t}
workflow:
  - step: a
    tool: {kind: noop}
    next:
      - {when: "false", then: [b]}
      - else: [c]
  - {step: b, depends_on: [a], tool: {kind: noop}}
  - {step: c, tool: {kind: noop}}
`,
			status:   RunCompleted,
			statuses: map[string]Status{"a": StatusCompleted, "b": StatusCompleted, "c": StatusCompleted, "end": StatusCompleted},
		},
		{
			name: "depends_on and a conditional next from the same step: depends_on holds (depends_on first in the file)",
			src: `metadata: {name: t}
workflow:
  - {step: b, depends_on: [a], tool: {kind: noop}}
  - step: a
    tool: {kind: noop}
    next:
      - {when: "false", then: [b]}
      - else: [c]
  - {step: c, tool: {kind: noop}}
`,
			status:   RunCompleted,
			statuses: map[string]Status{"a": StatusCompleted, "b": StatusCompleted, "c": StatusCompleted, "end": StatusCompleted},
		},
		{
			name: "a when that cannot be evaluated fails its step",
			src: `metadata: {name: t}
workflow:
  - step: a
    tool: {kind: noop}
    next:
      - {when: "steps.a.result.rows > 0", then: [b]}
  - {step: b, tool: {kind: noop}}
`,
			outcomes:  map[string]scripted{"a": {result: "not a map"}},
			status:    RunFailed,
			failedCnt: 1,
			statuses:  map[string]Status{"a": StatusFailed, "b": StatusSkipped, "end": StatusCompleted},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			agg, started := simulate(t, tc.src, tc.outcomes)
			require.Equal(t, tc.status, agg.Status)
			require.True(t, agg.EvaluatedByEndStep)
			require.Equal(t, tc.failedCnt, agg.FailedStepsCount)
			if tc.statuses != nil {
				require.Equal(t, tc.statuses, statuses(agg))
			}
			if tc.started != nil {
				require.Equal(t, tc.started, started)
			}
			for step, why := range tc.skipWhy {
				require.Equal(t, why, agg.Steps[step].SkipReason, step)
			}
		})
	}
}

func TestFailedStepRoutesToEnd(t *testing.T) {
	agg, _ := simulate(t, `metadata: {name: t}
failure_mode: continue
workflow:
  - {step: transform, tool: {kind: noop}, next: report}
  - {step: report, tool: {kind: noop}}
  - {step: cleanup, depends_on: [transform], on_failure: run, tool: {kind: noop, result: "{{ steps.transform.result }}"}}
`, map[string]scripted{"transform": {fail: "exit_code"}})
	tr := agg.Steps["transform"]
	require.True(t, tr.RoutedToEnd)
	require.Equal(t, "transform", *tr.OriginalFailedStep)
	require.Nil(t, tr.Result, "a failed step's result is null")
	require.Equal(t, &StepError{Type: "exit_code", Message: "boom"}, tr.Error)
	rep := agg.Steps["report"]
	require.False(t, rep.RoutedToEnd)
	require.Equal(t, "transform", *rep.OriginalFailedStep)
	require.Equal(t, []string{"transform"}, agg.FailedSteps)
	require.Equal(t, 3, agg.TotalSteps)
	require.Len(t, agg.Steps, 4, "steps holds end too")
}

func TestOnFailureRunSeesNullResult(t *testing.T) {
	pb, err := Parse("t.yaml", []byte(`metadata: {name: t}
workflow:
  - {step: a, tool: {kind: noop}}
  - {step: b, depends_on: [a], on_failure: run, tool: {kind: noop, result: "{{ steps.a.result == nil ? 'null' : 'set' }} {{ steps.a.error.type }}"}}
`))
	require.NoError(t, err)
	run := NewRun(pb, nil, "t-1", time.Now)
	require.Len(t, run.Ready(), 1)
	run.Fail("a", &StepError{Type: "exit_code", Message: "x"}, 2)
	ready := run.Ready()
	require.Len(t, ready, 1)
	spec, err := run.RenderTool(ready[0])
	require.NoError(t, err)
	require.Equal(t, "null exit_code", spec["result"])
}

func TestEventsAreStampedAndOrdered(t *testing.T) {
	pb, err := Parse("t.yaml", []byte("metadata: {name: t}\nworkflow:\n  - {step: a, tool: {kind: noop}, next: b}\n  - {step: b, tool: {kind: noop}}\n"))
	require.NoError(t, err)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	run := NewRun(pb, nil, "t-1", func() time.Time { return at })
	run.Ready()
	run.Complete("a", nil, 2)
	run.Ready()
	run.Fail("b", &StepError{Type: "exit_code", Message: "x"}, 1)
	run.StartEnd()
	run.Finish(nil, nil, 0)
	var types []string
	for i, e := range run.Events() {
		require.Equal(t, i+1, e.Seq)
		require.Equal(t, at, e.Time)
		types = append(types, e.Type+":"+e.Step)
	}
	require.Equal(t, []string{"step_started:a", "step_completed:a", "step_started:b", "step_failed:b", "step_started:end", "end_evaluated:end", "playbook_failed:", "workflow_failed:"}, types)
	b := run.State("b")
	require.Equal(t, at, *b.StartedAt)
	require.Equal(t, at, *b.EndedAt)
}

func TestRetriedAttemptsBecomeEvents(t *testing.T) {
	pb, err := Parse("t.yaml", []byte("metadata: {name: t}\nworkflow:\n  - {step: a, tool: {kind: noop}}\n"))
	require.NoError(t, err)
	run := NewRun(pb, nil, "t-1", time.Now)
	run.Ready()
	fail := StepError{Type: "exit_code", Message: "x"}
	run.Settle("a", Outcome{Err: &fail, Attempts: 3, Recovery: RecoveryNoHandler, AttemptErrors: []AttemptRecord{
		{Attempt: 1, Error: fail}, {Attempt: 2, Error: fail}, {Attempt: 3, Error: fail}}})
	var types []string
	for _, e := range run.Events() {
		types = append(types, e.Type)
	}
	require.Equal(t, []string{"step_started", "step_retry", "step_retry", "step_retry_exhausted", "step_failed"}, types)
	failed := run.Events()[4]
	require.Equal(t, map[string]any{"routed_to_end": true, "original_failed_step": "a"}, failed.Data)
}

func TestWorkloadOverridesDefaults(t *testing.T) {
	pb, err := Parse("t.yaml", []byte("metadata: {name: t}\nworkload: {a: 1, b: 2}\nworkflow:\n  - {step: s, tool: {kind: noop, result: '{{ workload.a + workload.b }}'}}\n"))
	require.NoError(t, err)
	run := NewRun(pb, map[string]any{"b": 40}, "t-1", time.Now)
	spec, err := run.RenderTool(run.Ready()[0])
	require.NoError(t, err)
	require.Equal(t, 41, spec["result"])
}

func TestTemplates(t *testing.T) {
	env := map[string]any{"workload": map[string]any{"n": 3.0, "name": "x", "list": []any{1, 2}}, "steps": map[string]any{}, "execution_id": "e-1", "playbook": map[string]any{}}
	cases := []struct {
		src  string
		want any
	}{
		{"{{ workload.n }}", 3.0},
		{"  {{ workload.list }} ", []any{1, 2}},
		{"n={{ workload.n }}", "n=3"},
		{"{{ workload.name }}-{{ execution_id }}", "x-e-1"},
		{"list: {{ workload.list }}", "list: [1,2]"},
		{"{{ workload.missing }}!", "!"},
	}
	for _, tc := range cases {
		tpl, err := CompileTemplate(tc.src, ScopeStep)
		require.NoError(t, err, tc.src)
		got, err := tpl.Render(env)
		require.NoError(t, err, tc.src)
		require.Equal(t, tc.want, got, tc.src)
	}
}

func TestPendingFailedWaitsForClassification(t *testing.T) {
	src := `metadata: {name: t}
use_pending_failed: true
workflow:
  - {step: a, tool: {kind: shell, command: "x"}, next: b}
  - {step: b, tool: {kind: noop}}
`
	newRun := func() *Run {
		pb, err := Parse("t.yaml", []byte(src))
		require.NoError(t, err)
		run := NewRun(pb, nil, "t-1", time.Now)
		require.Len(t, run.Ready(), 1)
		run.Settle("a", Outcome{Err: &StepError{Type: "exit_code", Message: "x"}, Attempts: 2, Recovery: RecoveryNoHandler})
		return run
	}

	run := newRun()
	require.Equal(t, StatusPendingFailed, run.State("a").Status)
	require.Empty(t, run.Ready(), "the dependant waits")
	require.False(t, run.EndReady(), "the run is not finished")
	require.Equal(t, []string{"a"}, []string{run.Pending()[0].Step})
	require.EqualError(t, run.CheckClassify("b", ClassifyRetry), `step "b" is pending, not pending_failed: only a pending_failed step can be classified`)
	require.EqualError(t, run.CheckClassify("zz", ClassifyRetry), `no step "zz" in playbook t`)
	require.EqualError(t, run.CheckClassify("a", "ignore"), `action "ignore": classify a step as retry, fail or skip`)

	// retry: the step runs again and its attempts add up.
	require.NoError(t, run.Classify("a", ClassifyRetry, "cli", ""))
	require.Equal(t, []string{"a"}, names(run.Ready()))
	run.Settle("a", Outcome{Result: "ok", Attempts: 1})
	require.Equal(t, 3, run.State("a").Attempts)
	require.Equal(t, []string{"b"}, names(run.Ready()))

	require.Equal(t, "retry by cli", run.State("a").Classified)

	// who and why are recorded in the event and the step's note.
	run = newRun()
	require.NoError(t, run.Classify("a", ClassifyFail, "mcp", "the disk is gone"))
	ev := run.Events()[len(run.Events())-2]
	require.Equal(t, "step_classified", ev.Type)
	require.Equal(t, "fail (by mcp): the disk is gone", ev.Message)
	require.Equal(t, map[string]any{"action": "fail", "by": "mcp", "reason": "the disk is gone"}, ev.Data)
	require.Equal(t, "exit_code: x (routed to end); classified fail by mcp: the disk is gone", run.State("a").Note())

	// skip: the dependant is skipped too, and the run reaches end.
	run = newRun()
	require.NoError(t, run.Classify("a", ClassifySkip, "cli", ""))
	require.Empty(t, run.Ready())
	require.True(t, run.EndReady())
	require.Equal(t, StatusSkipped, run.State("b").Status)
	run.StartEnd()
	require.Equal(t, RunCompleted, run.Finish(nil, nil, 0).Status)

	// fail: as if no one had waited.
	run = newRun()
	require.NoError(t, run.Classify("a", ClassifyFail, "pending_timeout", ""))
	require.Equal(t, StatusFailed, run.State("a").Status)
	require.Equal(t, 2, run.State("a").Attempts)
	run.Ready()
	require.True(t, run.EndReady())
}

// Only failures no exit-code rule matched wait; a rule that gave up fails.
func TestPendingFailedOnlyForUnmatchedFailures(t *testing.T) {
	pb, err := Parse("t.yaml", []byte("metadata: {name: t}\nuse_pending_failed: true\nworkflow:\n  - {step: a, tool: {kind: noop}}\n"))
	require.NoError(t, err)
	run := NewRun(pb, nil, "t-1", time.Now)
	run.Ready()
	run.Settle("a", Outcome{Err: &StepError{Type: "exit_code"}, Attempts: 3, Recovery: RecoveryMaxRetriesExceeded,
		AttemptErrors: []AttemptRecord{{Attempt: 1, Error: StepError{Type: "exit_code"}, Recovery: RecoveryRetried}}})
	require.Equal(t, StatusFailed, run.State("a").Status)
	require.Equal(t, RecoveryMaxRetriesExceeded, run.State("a").Recovery)
	require.Len(t, run.State("a").AttemptErrors, 1)
}

func names(steps []*Step) []string {
	out := []string{}
	for _, s := range steps {
		out = append(out, s.Name)
	}
	return out
}

func TestFailureModeCancel(t *testing.T) {
	pb, err := Parse("t.yaml", []byte(`metadata: {name: t}
failure_mode: cancel
workflow:
  - {step: fails, tool: {kind: noop}}
  - {step: sleeper1, tool: {kind: noop}}
  - {step: sleeper2, tool: {kind: noop}, next: after}
  - {step: cleanup, on_failure: run, tool: {kind: noop}}
  - {step: after, tool: {kind: noop}}
  - {step: report, depends_on: [sleeper1], on_failure: run, tool: {kind: noop}}
`))
	require.NoError(t, err)
	run := NewRun(pb, nil, "t-1", time.Now)
	require.Equal(t, []string{"fails", "sleeper1", "sleeper2", "cleanup"}, names(run.Ready()))
	require.Empty(t, run.ToCancel(), "nothing to cancel before a failure")
	run.Settle("fails", Outcome{Err: &StepError{Type: "exit_code"}, Attempts: 1, Recovery: RecoveryNoHandler})
	require.Equal(t, []string{"sleeper1", "sleeper2"}, run.ToCancel(), "running steps but on_failure: run ones")
	require.Empty(t, run.ToCancel(), "each is cancelled once")
	run.Settle("sleeper1", Outcome{Err: &StepError{Type: ErrCancelled, Message: "cancelled"}})
	run.Settle("sleeper2", Outcome{Err: &StepError{Type: ErrCancelled, Message: "cancelled"}})
	run.Settle("cleanup", Outcome{Result: "ok", Attempts: 1})
	require.Equal(t, []string{"report"}, names(run.Ready()), "on_failure: run still runs after a cancelled upstream")
	run.Settle("report", Outcome{Attempts: 1})
	require.True(t, run.EndReady())
	run.StartEnd()
	agg := run.Finish(nil, nil, 0)
	require.Equal(t, RunFailed, agg.Status)
	require.Equal(t, 1, agg.FailedStepsCount, "cancelled steps are not failed ones")
	require.Equal(t, StatusCancelled, agg.Steps["sleeper1"].Status)
	require.True(t, agg.Steps["sleeper1"].RoutedToEnd)
	require.Equal(t, "fails", *agg.Steps["sleeper1"].OriginalFailedStep)
	require.Equal(t, StatusSkipped, agg.Steps["after"].Status)
}

func TestCancelRunAndDrain(t *testing.T) {
	src := `metadata: {name: t}
use_pending_failed: true
workflow:
  - {step: a, tool: {kind: noop}, next: b}
  - {step: b, tool: {kind: noop}}
  - {step: c, tool: {kind: noop}}
  - {step: end, success_when: "true"}
`
	pb, err := Parse("t.yaml", []byte(src))
	require.NoError(t, err)

	run := NewRun(pb, nil, "t-1", time.Now)
	require.Equal(t, []string{"a", "c"}, names(run.Ready()))
	run.Settle("c", Outcome{Err: &StepError{Type: "exit_code"}, Attempts: 1, Recovery: RecoveryNoHandler})
	require.Equal(t, StatusPendingFailed, run.State("c").Status)
	run.CancelRun("cancel requested")
	require.Equal(t, StatusCancelled, run.State("c").Status, "a step waiting for a classification is cancelled")
	require.Equal(t, []string{"a"}, run.ToCancel())
	run.Settle("a", Outcome{Err: &StepError{Type: ErrCancelled}})
	require.Empty(t, run.Ready())
	require.Equal(t, "run cancelled", run.State("b").SkipReason)
	run.StartEnd()
	require.Equal(t, RunCancelled, run.Finish(nil, nil, 0).Status, "cancelled whatever success_when says")

	run = NewRun(pb, nil, "t-1", time.Now)
	run.Ready()
	run.Drain()
	require.Empty(t, run.ToCancel(), "a drain cancels nothing")
	run.Settle("a", Outcome{Result: 1, Attempts: 1})
	run.Settle("c", Outcome{Result: 1, Attempts: 1})
	require.Empty(t, run.Ready())
	require.Equal(t, StatusCompleted, run.State("a").Status, "running steps finish")
	require.Equal(t, "run drained: no new step starts", run.State("b").SkipReason)
	run.StartEnd()
	require.Equal(t, RunCancelled, run.Finish(nil, nil, 0).Status)
}

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
	pb, err := Parse("t.yaml", []byte(src))
	require.NoError(t, err)
	earlier := map[string]*StepState{
		"extract":   {Status: StatusCompleted, Result: "rows", Attempts: 2},
		"transform": {Status: StatusFailed},
		"load":      {Status: StatusSkipped},
		"audit":     {Status: StatusCompleted, Result: "ok"},
		"end":       {Status: StatusCompleted},
	}
	reuse, err := pb.ReusableSteps(earlier, "")
	require.NoError(t, err)
	require.Equal(t, []string{"audit", "extract"}, sortedKeys(reuse))

	run := NewRun(pb, nil, "t-2", time.Now)
	run.Reuse(reuse)
	require.Equal(t, []string{"transform"}, names(run.Ready()), "only what did not complete runs, its branch taken as before")
	require.Equal(t, StatusReused, run.State("extract").Status)
	require.Equal(t, "rows", run.State("extract").Result)
	run.Settle("transform", Outcome{Result: 1, Attempts: 1})
	require.Equal(t, []string{"load"}, names(run.Ready()))
	run.Settle("load", Outcome{Result: 1, Attempts: 1})
	run.Ready()
	run.StartEnd()
	require.Equal(t, RunCompleted, run.Finish(nil, nil, 0).Status)

	reuse, err = pb.ReusableSteps(earlier, "extract")
	require.NoError(t, err)
	require.Equal(t, []string{"audit"}, sortedKeys(reuse), "--step reruns the step and everything downstream")
	_, err = pb.ReusableSteps(earlier, "nope")
	require.EqualError(t, err, `no step "nope" to retry from in playbook t`)
	require.Equal(t, []string{"extract", "transform", "load", "end"}, pb.Downstream("extract"))
}
