package engine

import (
	"strings"
	"testing"
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"

	"github.com/stretchr/testify/require"
)

// The run's status as `end` decides it, with steps allowed to fail: only
// warnings make it completed_with_warnings, a real failure still fails
// it, and success_when sees warning_steps.
func TestWarningsDecideTheRunStatus(t *testing.T) {
	const steps = `
workflow:
  - step: probe
    tool: {kind: noop}
    allow_failure: true
    next: load
  - {step: load, tool: {kind: noop}}
  - {step: audit, tool: {kind: noop}}
`
	cases := []struct {
		name      string
		head, end string
		outcomes  map[string]scripted
		status    string
		failed    []string
		warnings  []string
		statuses  map[string]contract.Status
	}{
		{
			name:     "no failure: completed, no warnings",
			status:   contract.RunCompleted,
			failed:   []string{},
			statuses: map[string]contract.Status{"probe": contract.StatusCompleted, "load": contract.StatusCompleted},
		},
		{
			name:     "only an allowed failure: completed_with_warnings, and what follows it runs",
			outcomes: map[string]scripted{"probe": {fail: "exit_code"}},
			status:   contract.RunCompletedWithWarnings,
			failed:   []string{},
			warnings: []string{"probe"},
			statuses: map[string]contract.Status{"probe": contract.StatusFailed, "load": contract.StatusCompleted, "audit": contract.StatusCompleted},
		},
		{
			name:     "an allowed failure and a real one: failed",
			outcomes: map[string]scripted{"probe": {fail: "exit_code"}, "audit": {fail: "http_status"}},
			head:     "failure_mode: continue\n",
			status:   contract.RunFailed,
			failed:   []string{"audit"},
			warnings: []string{"probe"},
			statuses: map[string]contract.Status{"probe": contract.StatusFailed, "load": contract.StatusCompleted, "audit": contract.StatusFailed},
		},
		{
			name:     "success_when reading warning_steps fails the run",
			outcomes: map[string]scripted{"probe": {fail: "exit_code"}},
			end:      `  - {step: end, success_when: "'probe' not in warning_steps"}` + "\n",
			status:   contract.RunFailed,
			failed:   []string{},
			warnings: []string{"probe"},
		},
		{
			name:     "success_when counting warnings lets them through",
			outcomes: map[string]scripted{"probe": {fail: "exit_code"}},
			end:      `  - {step: end, success_when: "failed_steps_count == 0 and warning_steps_count <= 1"}` + "\n",
			status:   contract.RunCompletedWithWarnings,
			failed:   []string{},
			warnings: []string{"probe"},
		},
		{
			name:     "success_when that tolerates a real failure: completed, with the warnings said",
			outcomes: map[string]scripted{"probe": {fail: "exit_code"}, "audit": {fail: "http_status"}},
			head:     "failure_mode: continue\n",
			end:      `  - {step: end, success_when: "failed_steps == ['audit']"}` + "\n",
			status:   contract.RunCompletedWithWarnings,
			failed:   []string{"audit"},
			warnings: []string{"probe"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			agg, _ := simulate(t, "metadata: {name: t}\n"+c.head+steps+c.end, c.outcomes)
			require.Equal(t, c.status, agg.Status)
			require.Equal(t, c.failed, agg.FailedSteps)
			require.Equal(t, len(c.failed), agg.FailedStepsCount)
			if c.warnings == nil {
				c.warnings = []string{}
			}
			require.Equal(t, c.warnings, agg.WarningSteps)
			require.Equal(t, len(c.warnings), agg.WarningStepsCount)
			for name, want := range c.statuses {
				require.Equal(t, want, agg.Steps[name].Status, name)
			}
		})
	}
}

// A failure allowed is failed with its error, not routed to end; its next
// is evaluated with it failed (a branch can read its status), and under
// failure_mode cancel nothing is cancelled for it.
func TestAllowedFailureLetsTheRunGoOn(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
failure_mode: cancel
notify:
  on_success: {webhook: "http://127.0.0.1:9/ok"}
  on_failure: {webhook: "http://127.0.0.1:9/ko"}
workflow:
  - step: probe
    tool: {kind: shell, command: "false"}
    allow_failure: true
    next:
      - {when: "steps.probe.status == 'failed' && steps.probe.error.type == 'exit_code'", then: [fallback]}
      - else: [load]
  - {step: slow, tool: {kind: shell, command: "sleep 9"}}
  - {step: fallback, tool: {kind: noop}}
  - {step: load, tool: {kind: noop}}
`))
	require.NoError(t, err)
	run := NewRun(pb, nil, "t-1", time.Now)
	require.Equal(t, []string{"probe", "slow"}, names(run.Ready()))
	run.Settle("probe", contract.Outcome{Err: &contract.StepError{Type: contract.ErrExitCode, Message: "exited with code 1"}, Attempts: 1, Recovery: contract.RecoveryNoHandler})
	require.Empty(t, run.ToCancel(), "an allowed failure does not trigger failure_mode cancel")
	require.Equal(t, []string{"fallback"}, names(run.Ready()), "its next was evaluated with it failed")
	probe := run.State("probe")
	require.Equal(t, contract.StatusFailed, probe.Status)
	require.Equal(t, contract.ErrExitCode, probe.Error.Type)
	require.False(t, probe.RoutedToEnd)
	require.Nil(t, probe.OriginalFailedStep)
	require.True(t, probe.AllowedFailure)
	require.Equal(t, "exit_code: exited with code 1 (allowed to fail)", probe.Note())
	run.Settle("fallback", contract.Outcome{Attempts: 1})
	run.Settle("slow", contract.Outcome{Attempts: 1})
	require.Empty(t, run.Ready())
	require.Equal(t, contract.StatusSkipped, run.State("load").Status)
	require.True(t, run.EndReady())
	run.StartEnd()
	agg := run.Finish(nil, nil, 0)
	require.Equal(t, contract.RunCompletedWithWarnings, agg.Status)
	event, url, err := run.Webhook(agg.Status)
	require.NoError(t, err)
	require.Equal(t, "on_success", event)
	require.Equal(t, "http://127.0.0.1:9/ok", url)
	require.Contains(t, run.DetailsMarkdown(), "**completed_with_warnings**: allowed to fail: probe")
	var ended Event
	for _, e := range run.Events() {
		if e.Type == "end_evaluated" {
			ended = e
		}
	}
	require.Equal(t, "0 of 4 steps failed, 1 allowed to fail; run completed_with_warnings", ended.Message)
}

// A cancelled run ends cancelled, warnings or not; a failed run's first
// failure names a real failure before a warning.
func TestWarningsDoNotMaskCancelOrFailure(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
failure_mode: continue
workflow:
  - {step: probe, tool: {kind: noop}, allow_failure: true}
  - {step: audit, tool: {kind: noop}}
`))
	require.NoError(t, err)
	run := NewRun(pb, nil, "t-1", time.Now)
	run.Ready()
	run.Fail("probe", &contract.StepError{Type: "quota", Message: "spent"}, 1)
	run.Fail("audit", &contract.StepError{Type: "http_status", Message: "503"}, 1)
	require.Equal(t, "audit: http_status: 503", run.FirstFailure())

	run = NewRun(pb, nil, "t-2", time.Now)
	run.Ready()
	run.Fail("probe", &contract.StepError{Type: "quota", Message: "spent"}, 1)
	run.CancelRun("enough")
	run.Settle("audit", contract.Outcome{Err: &contract.StepError{Type: contract.ErrCancelled, Message: "cancelled"}, Attempts: 1})
	run.StartEnd()
	require.Equal(t, contract.RunCancelled, run.Finish(nil, nil, 0).Status)
}

// A fail step's error is its type, message and details, as rendered; its
// message defaults to naming the step.
func TestRaised(t *testing.T) {
	require.Equal(t, &contract.StepError{Type: "empty_input", Message: "0 rows", Details: map[string]any{"table": "orders"}},
		Raised("no_rows", map[string]any{"type": "empty_input", "message": "0 rows", "details": map[string]any{"table": "orders"}}))
	require.Equal(t, &contract.StepError{Type: "quota", Message: "raised by step over"}, Raised("over", map[string]any{"type": "quota"}))
	require.Equal(t, &contract.StepError{Type: "quota", Message: "3"}, Raised("over", map[string]any{"type": "quota", "message": 3}))
}

// The Web UI's details list, under the step table, the files each step
// handed on and the queue of each step that names one.
func TestDetailsListFilesAndQueues(t *testing.T) {
	pb, err := spec.Parse("f.yaml", []byte(`metadata: {name: f}
workflow:
  - {step: extract, queue: io, tool: {kind: shell, command: x}, outputs: {files: [raw.json, "b|c.txt"]}}
  - {step: transform, depends_on: [extract], queue: cpu, tool: {kind: shell, command: x}}
  - {step: load, depends_on: [transform], queue: io, tool: {kind: shell, command: x}}
`))
	require.NoError(t, err)
	run := NewRun(pb, nil, "f-1", time.Now)
	require.NotContains(t, run.DetailsMarkdown(), "**files**")
	run.Ready()
	sum := strings.Repeat("ab", 32)
	run.Settle("extract", contract.Outcome{Attempts: 1, Files: map[string]contract.FileRef{
		"raw.json": {URI: "file:///s/f-1/extract/raw.json", Bytes: 10, SHA256: sum},
		"b|c.txt":  {URI: "file:///s/f-1/extract/b|c.txt", Bytes: 3, SHA256: sum},
	}})
	require.Contains(t, run.DetailsMarkdown(), "\n**files**\n\n| step | file | bytes | sha256 |\n| --- | --- | --- | --- |\n"+
		"| extract | b\\|c.txt | 3 | abababababab |\n| extract | raw.json | 10 | abababababab |\n"+
		"\n**queues**\n\n| queue | steps |\n| --- | --- |\n| io | extract, load |\n| cpu | transform |\n")
}
