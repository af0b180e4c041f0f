package engine

import (
	"testing"
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"

	"github.com/stretchr/testify/require"
)

func TestPendingFailedWaitsForClassification(t *testing.T) {
	src := `metadata: {name: t}
use_pending_failed: true
workflow:
  - {step: a, tool: {kind: shell, command: "x"}, next: b}
  - {step: b, tool: {kind: noop}}
`
	newRun := func() *Run {
		pb, err := spec.Parse("t.yaml", []byte(src))
		require.NoError(t, err)
		run := NewRun(pb, nil, "t-1", time.Now)
		require.Len(t, run.Ready(), 1)
		run.Settle("a", contract.Outcome{Err: &contract.StepError{Type: "exit_code", Message: "x"}, Attempts: 2, Recovery: contract.RecoveryNoHandler})
		return run
	}

	run := newRun()
	require.Equal(t, contract.StatusPendingFailed, run.State("a").Status)
	require.Empty(t, run.Ready(), "the dependant waits")
	require.False(t, run.EndReady(), "the run is not finished")
	require.Equal(t, []string{"a"}, []string{run.Pending()[0].Step})
	require.EqualError(t, run.CheckClassify("b", ClassifyRetry), `step "b" is pending, not pending_failed: only a pending_failed step can be classified`)
	require.EqualError(t, run.CheckClassify("zz", ClassifyRetry), `no step "zz" in playbook t`)
	require.EqualError(t, run.CheckClassify("a", "ignore"), `action "ignore": classify a step as retry, fail or skip`)

	// retry: the step runs again and its attempts add up.
	require.NoError(t, run.Classify("a", ClassifyRetry, "cli", ""))
	require.Equal(t, []string{"a"}, names(run.Ready()))
	run.Settle("a", contract.Outcome{Result: "ok", Attempts: 1})
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
	require.Equal(t, contract.StatusSkipped, run.State("b").Status)
	run.StartEnd()
	require.Equal(t, contract.RunCompleted, run.Finish(nil, nil, 0).Status)

	// fail: as if no one had waited.
	run = newRun()
	require.NoError(t, run.Classify("a", ClassifyFail, "pending_timeout", ""))
	require.Equal(t, contract.StatusFailed, run.State("a").Status)
	require.Equal(t, 2, run.State("a").Attempts)
	run.Ready()
	require.True(t, run.EndReady())
}

// Only failures no exit-code rule matched wait; a rule that gave up fails.
func TestPendingFailedOnlyForUnmatchedFailures(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte("metadata: {name: t}\nuse_pending_failed: true\nworkflow:\n  - {step: a, tool: {kind: noop}}\n"))
	require.NoError(t, err)
	run := NewRun(pb, nil, "t-1", time.Now)
	run.Ready()
	run.Settle("a", contract.Outcome{Err: &contract.StepError{Type: "exit_code"}, Attempts: 3, Recovery: contract.RecoveryMaxRetriesExceeded,
		AttemptErrors: []contract.AttemptRecord{{Attempt: 1, Error: contract.StepError{Type: "exit_code"}, Recovery: contract.RecoveryRetried}}})
	require.Equal(t, contract.StatusFailed, run.State("a").Status)
	require.Equal(t, contract.RecoveryMaxRetriesExceeded, run.State("a").Recovery)
	require.Len(t, run.State("a").AttemptErrors, 1)
}
