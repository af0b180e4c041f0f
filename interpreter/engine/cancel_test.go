package engine

import (
	"strings"
	"testing"
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"

	"github.com/stretchr/testify/require"
)

func names(steps []*spec.Step) []string {
	out := []string{}
	for _, s := range steps {
		out = append(out, s.Name)
	}
	return out
}

func TestFailureModeCancel(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
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
	run.Settle("fails", contract.Outcome{Err: &contract.StepError{Type: "exit_code"}, Attempts: 1, Recovery: contract.RecoveryNoHandler})
	require.Equal(t, []string{"sleeper1", "sleeper2"}, run.ToCancel(), "running steps but on_failure: run ones")
	require.Empty(t, run.ToCancel(), "each is cancelled once")
	run.Settle("sleeper1", contract.Outcome{Err: &contract.StepError{Type: contract.ErrCancelled, Message: "cancelled"}})
	run.Settle("sleeper2", contract.Outcome{Err: &contract.StepError{Type: contract.ErrCancelled, Message: "cancelled"}})
	run.Settle("cleanup", contract.Outcome{Result: "ok", Attempts: 1})
	require.Equal(t, []string{"report"}, names(run.Ready()), "on_failure: run still runs after a cancelled upstream")
	run.Settle("report", contract.Outcome{Attempts: 1})
	require.True(t, run.EndReady())
	run.StartEnd()
	agg := run.Finish(nil, nil, 0)
	require.Equal(t, contract.RunFailed, agg.Status)
	require.Equal(t, 1, agg.FailedStepsCount, "cancelled steps are not failed ones")
	require.Equal(t, contract.StatusCancelled, agg.Steps["sleeper1"].Status)
	require.True(t, agg.Steps["sleeper1"].RoutedToEnd)
	require.Equal(t, "fails", *agg.Steps["sleeper1"].OriginalFailedStep)
	require.Equal(t, contract.StatusSkipped, agg.Steps["after"].Status)
	require.Equal(t, "upstream sleeper2 cancelled after fails failed", agg.Steps["after"].SkipReason,
		"the skip names the failure behind the cancel, not only the cancelled step")
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
	pb, err := spec.Parse("t.yaml", []byte(src))
	require.NoError(t, err)

	run := NewRun(pb, nil, "t-1", time.Now)
	require.Equal(t, []string{"a", "c"}, names(run.Ready()))
	run.Settle("c", contract.Outcome{Err: &contract.StepError{Type: "exit_code"}, Attempts: 1, Recovery: contract.RecoveryNoHandler})
	require.Equal(t, contract.StatusPendingFailed, run.State("c").Status)
	run.CancelRun("cancel requested")
	require.Equal(t, contract.StatusCancelled, run.State("c").Status, "a step waiting for a classification is cancelled")
	require.Equal(t, []string{"a"}, run.ToCancel())
	run.Settle("a", contract.Outcome{Err: &contract.StepError{Type: contract.ErrCancelled}})
	require.Empty(t, run.Ready())
	require.Equal(t, "run cancelled", run.State("b").SkipReason)
	run.StartEnd()
	require.Equal(t, contract.RunCancelled, run.Finish(nil, nil, 0).Status, "cancelled whatever success_when says")

	run = NewRun(pb, nil, "t-1", time.Now)
	run.Ready()
	run.Drain()
	require.Empty(t, run.ToCancel(), "a drain cancels nothing")
	run.Settle("a", contract.Outcome{Result: 1, Attempts: 1})
	run.Settle("c", contract.Outcome{Result: 1, Attempts: 1})
	require.Empty(t, run.Ready())
	require.Equal(t, contract.StatusCompleted, run.State("a").Status, "running steps finish")
	require.Equal(t, "run drained: no new step starts", run.State("b").SkipReason)
	run.StartEnd()
	require.Equal(t, contract.RunCancelled, run.Finish(nil, nil, 0).Status)

	// A step waiting for its classification goes on waiting under a
	// drain; classified retry, it is skipped: a drained run starts no
	// new attempt.
	run = NewRun(pb, nil, "t-1", time.Now)
	run.Ready()
	run.Settle("c", contract.Outcome{Err: &contract.StepError{Type: "exit_code"}, Attempts: 1, Recovery: contract.RecoveryNoHandler})
	run.Drain()
	require.Equal(t, contract.StatusPendingFailed, run.State("c").Status, "a drain leaves the classification to a person")
	run.Settle("a", contract.Outcome{Result: 1, Attempts: 1})
	require.NoError(t, run.Classify("c", ClassifyRetry, "ops", ""))
	require.Empty(t, run.Ready())
	require.Equal(t, contract.StatusSkipped, run.State("c").Status)
	require.Equal(t, "run drained: no new step starts", run.State("c").SkipReason)
}

// A reason any Temporal client signalled is kept whole up to
// contract.MaxDecisionBytes; over it, the run keeps a line saying so.
func TestCancelReasonIsBounded(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte("metadata: {name: t}\nworkflow:\n  - {step: a, tool: {kind: noop}}\n"))
	require.NoError(t, err)
	for _, c := range []struct {
		name, reason, want string
	}{
		{"empty keeps none", "", ""},
		{"short kept", "maintenance window", "maintenance window"},
		{"at the bound kept", strings.Repeat("r", contract.MaxDecisionBytes), strings.Repeat("r", contract.MaxDecisionBytes)},
		{"over the bound said", strings.Repeat("r", contract.MaxDecisionBytes+1), "(a reason of 262145 bytes was sent, over the limit of 262144 (256 KiB) on what is sent to a run: it was not kept)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := NewRun(pb, nil, "t-1", time.Now)
			run.RecordCancelReason(c.reason)
			run.CancelRun("cancel requested")
			require.Equal(t, c.want, run.CancelReason())
		})
	}
}

// A step that fails with no rule to handle it after the run was cancelled
// (a loop whose element failed before the cancel) fails at once: nobody
// is to classify it, and the cancelled run would wait. A run from before
// the change waited (WithCancelledFailsAtOnce false).
func TestAStepFailingAfterACancelDoesNotWait(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
use_pending_failed: true
workflow:
  - {step: a, tool: {kind: noop}}
`))
	require.NoError(t, err)
	for _, c := range []struct {
		opts []RunOption
		want contract.Status
	}{
		{nil, contract.StatusFailed},
		{[]RunOption{WithCancelledFailsAtOnce(func() bool { return true })}, contract.StatusFailed},
		{[]RunOption{WithCancelledFailsAtOnce(func() bool { return false })}, contract.StatusPendingFailed},
	} {
		run := NewRun(pb, nil, "t-1", time.Now, c.opts...)
		require.Equal(t, []string{"a"}, names(run.Ready()))
		run.CancelRun("cancel requested")
		require.Equal(t, []string{"a"}, run.ToCancel())
		run.Settle("a", contract.Outcome{Err: &contract.StepError{Type: "exit_code"}, Attempts: 1, Recovery: contract.RecoveryNoHandler})
		require.Equal(t, c.want, run.State("a").Status)
	}
}
