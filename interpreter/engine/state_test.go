package engine

import (
	"testing"
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"

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
func simulate(t *testing.T, src string, outcomes map[string]scripted) (*contract.Aggregate, []string) {
	t.Helper()
	pb, err := spec.Parse("t.yaml", []byte(src))
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
				run.Fail(s.Name, &contract.StepError{Type: o.fail, Message: "boom"}, 1)
			} else {
				run.Complete(s.Name, o.result, 1)
			}
		}
	}
	run.StartEnd()
	return run.Finish(nil, nil, 0), started
}

func statuses(agg *contract.Aggregate) map[string]contract.Status {
	out := map[string]contract.Status{}
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
		statuses  map[string]contract.Status
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
			status:   contract.RunCompleted,
			statuses: map[string]contract.Status{"a": contract.StatusCompleted, "b": contract.StatusCompleted, "c": contract.StatusCompleted, "end": contract.StatusCompleted},
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
			status:   contract.RunCompleted,
			statuses: map[string]contract.Status{"a": contract.StatusCompleted, "load": contract.StatusCompleted, "idle": contract.StatusSkipped, "end": contract.StatusCompleted},
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
			status:   contract.RunCompleted,
			statuses: map[string]contract.Status{"a": contract.StatusCompleted, "load": contract.StatusSkipped, "index": contract.StatusSkipped, "end": contract.StatusCompleted},
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
			status:  contract.RunCompleted,
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
			status:   contract.RunCompleted,
			statuses: map[string]contract.Status{"a": contract.StatusCompleted, "left": contract.StatusSkipped, "right": contract.StatusCompleted, "join": contract.StatusCompleted, "end": contract.StatusCompleted},
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
			status:    contract.RunFailed,
			failedCnt: 1,
			statuses: map[string]contract.Status{"prep": contract.StatusCompleted, "transform": contract.StatusFailed, "audit": contract.StatusCompleted,
				"report": contract.StatusSkipped, "publish": contract.StatusSkipped, "cleanup": contract.StatusCompleted, "end": contract.StatusCompleted},
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
			status:    contract.RunFailed,
			failedCnt: 1,
			statuses:  map[string]contract.Status{"a": contract.StatusFailed, "b": contract.StatusCompleted, "c": contract.StatusSkipped, "d": contract.StatusCompleted, "end": contract.StatusCompleted},
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
			status:    contract.RunCompleted,
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
			status:   contract.RunCompleted,
			statuses: map[string]contract.Status{"a": contract.StatusCompleted, "b": contract.StatusCompleted, "c": contract.StatusCompleted, "end": contract.StatusCompleted},
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
			status:   contract.RunCompleted,
			statuses: map[string]contract.Status{"a": contract.StatusCompleted, "b": contract.StatusCompleted, "c": contract.StatusCompleted, "end": contract.StatusCompleted},
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
			status:    contract.RunFailed,
			failedCnt: 1,
			statuses:  map[string]contract.Status{"a": contract.StatusFailed, "b": contract.StatusSkipped, "end": contract.StatusCompleted},
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
