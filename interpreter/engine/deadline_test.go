package engine

import (
	"testing"
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"

	"github.com/stretchr/testify/require"
)

// cleanupPlaybook: lock, then work (then after); side beside them; unlock
// (a cleanup step after lock and work), then post, another cleanup step.
func cleanupPlaybook(t *testing.T, head, end string) *spec.Playbook {
	t.Helper()
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
`+head+`
workflow:
  - {step: lock, tool: {kind: noop}, next: work}
  - {step: work, tool: {kind: shell, command: "sleep 60"}, next: after}
  - {step: side, tool: {kind: shell, command: "sleep 60"}}
  - {step: after, tool: {kind: noop}}
  - {step: unlock, depends_on: [lock, work], on_cancel: run, tool: {kind: noop}}
  - {step: post, depends_on: [unlock], always: true, tool: {kind: noop}}
  - {step: end`+end+`}
`))
	require.NoError(t, err)
	return pb
}

var threeSeconds = contract.Deadline{At: time.Date(2026, 11, 24, 8, 0, 3, 0, time.UTC), Timeout: "3s", SetBy: "t-1"}

func timeOut(r *Run) []string { r.TimeOut(); return nil }

var cancelledOutcome = contract.Outcome{Err: &contract.StepError{Type: contract.ErrCancelled, Message: "the step was cancelled while it ran"}, Attempts: 1}

// TestRunWindsDown drives a run to the point where work and side run,
// stops it (the deadline, a cancel, a drain, or two of them), and checks
// what is cancelled, that the cleanup steps wait for the others to settle
// and then run in their order, and how the run ends.
func TestRunWindsDown(t *testing.T) {
	cases := []struct {
		name, head, end string
		stop            func(r *Run) (cancelled []string) // what it listed to cancel itself
		drained         bool                              // running steps finish instead of being cancelled
		cancelled       []string
		status          string
		skipReason      string
		workError       string // type: message of work's error
		timeout         bool   // the aggregate records the deadline
	}{
		{name: "deadline, on_timeout cancel, no success_when: failed", head: "timeout: 3s",
			stop: timeOut, cancelled: []string{"work", "side"}, status: contract.RunFailed,
			skipReason: "the run's deadline of 3s passed", workError: "timeout: the run's deadline of 3s passed", timeout: true},
		{name: "deadline, on_timeout cancel, success_when accepts: completed", head: "timeout: 3s", end: `, success_when: "run.timed_out and failed_steps_count == 0"`,
			stop: timeOut, cancelled: []string{"work", "side"}, status: contract.RunCompleted,
			skipReason: "the run's deadline of 3s passed", workError: "timeout: the run's deadline of 3s passed", timeout: true},
		{name: "deadline, on_timeout fail, success_when accepts: failed", head: "timeout: 3s\non_timeout: fail", end: `, success_when: "true"`,
			stop: timeOut, cancelled: []string{"work", "side"}, status: contract.RunFailed,
			skipReason: "the run's deadline of 3s passed", workError: "timeout: the run's deadline of 3s passed", timeout: true},
		{name: "cancel", stop: func(r *Run) []string { r.CancelRun("cancel requested"); return nil }, cancelled: []string{"work", "side"},
			status: contract.RunCancelled, skipReason: "run cancelled", workError: "cancelled: the step was cancelled while it ran"},
		{name: "drain", stop: func(r *Run) []string { r.Drain(); return nil }, drained: true, status: contract.RunCancelled, skipReason: "run drained: no new step starts"},
		{name: "cancel, then the deadline: cancelled", head: "timeout: 3s",
			stop: func(r *Run) []string { r.CancelRun("cancel requested"); r.TimeOut(); return nil }, cancelled: []string{"work", "side"},
			status: contract.RunCancelled, skipReason: "run cancelled", workError: "cancelled: the step was cancelled while it ran", timeout: true},
		{name: "deadline, then a cancel: the deadline decides", head: "timeout: 3s", end: `, success_when: "true"`,
			stop: func(r *Run) []string { r.TimeOut(); c := r.ToCancel(); r.CancelRun("cancel requested"); return c }, cancelled: []string{"work", "side"},
			status: contract.RunCompleted, skipReason: "the run's deadline of 3s passed", workError: "timeout: the run's deadline of 3s passed", timeout: true},
		{name: "drain, then the deadline: what runs is cancelled, the run cancelled", head: "timeout: 3s",
			stop: func(r *Run) []string { r.Drain(); r.TimeOut(); return nil }, cancelled: []string{"work", "side"},
			status: contract.RunCancelled, skipReason: "run drained: no new step starts", workError: "timeout: the run's deadline of 3s passed", timeout: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pb := cleanupPlaybook(t, c.head, c.end)
			var opts []RunOption
			if pb.Timeout > 0 {
				opts = append(opts, WithDeadline(threeSeconds))
			}
			r := NewRun(pb, nil, "t-1", time.Now, opts...)
			require.Equal(t, []string{"lock", "side"}, names(r.Ready()))
			r.Settle("lock", contract.Outcome{Result: "locked", Attempts: 1})
			require.Equal(t, []string{"work"}, names(r.Ready()))

			cancelled := append(c.stop(r), r.ToCancel()...)
			require.Equal(t, c.cancelled, cancelled, "what is cancelled")
			settle := cancelledOutcome
			if c.drained {
				settle = contract.Outcome{Result: "done", Attempts: 1}
			}
			r.Settle("work", settle)
			require.Empty(t, names(r.Ready()), "unlock waits for side to settle too")
			require.Equal(t, contract.StatusPending, r.State("unlock").Status)
			r.Settle("side", settle)
			require.Equal(t, []string{"unlock"}, names(r.Ready()), "then the cleanup steps run, in their order")
			require.False(t, r.EndReady())
			r.Settle("unlock", contract.Outcome{Result: "unlocked", Attempts: 1})
			require.Equal(t, []string{"post"}, names(r.Ready()))
			r.Settle("post", contract.Outcome{Attempts: 1})
			require.Empty(t, r.Ready())
			require.True(t, r.EndReady(), "then end")
			r.StartEnd()
			agg := r.Finish(nil, nil, 0)

			require.Equal(t, c.status, agg.Status)
			require.Equal(t, contract.StatusSkipped, agg.Steps["after"].Status)
			require.Equal(t, c.skipReason, agg.Steps["after"].SkipReason)
			if c.workError != "" {
				require.Equal(t, contract.StatusCancelled, agg.Steps["work"].Status)
				require.Equal(t, c.workError, agg.Steps["work"].Error.Type+": "+agg.Steps["work"].Error.Message)
			} else {
				require.Equal(t, contract.StatusCompleted, agg.Steps["work"].Status, "a drain lets it finish")
			}
			require.Zero(t, agg.FailedStepsCount)
			if c.timeout {
				require.Equal(t, &contract.RunTimeout{After: "3s", OnTimeout: string(pb.OnTimeout), Deadline: "2026-11-24T08:00:03Z"}, agg.Timeout)
			} else {
				require.Nil(t, agg.Timeout)
			}
			if agg.Status == contract.RunFailed {
				require.Equal(t, "the run's deadline of 3s passed (on_timeout: "+string(pb.OnTimeout)+")", r.FirstFailure(), "a failed run leads with its deadline")
			}
		})
	}
}

// A cleanup step already running when the cancel (or the deadline) comes
// is not cancelled; a step with only on_failure: run is, and after a
// cancel it is skipped as before.
func TestCleanupStepIsNeverCancelled(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
timeout: 1m
workflow:
  - {step: a, tool: {kind: noop}}
  - {step: release, on_cancel: run, tool: {kind: noop}}
  - {step: report, on_failure: run, tool: {kind: noop}}
  - {step: late, depends_on: [a], on_failure: run, tool: {kind: noop}}
  - {step: child, tool: {kind: playbook, path: sub.yaml}}
`))
	require.NoError(t, err)
	for _, stop := range []string{"cancel", "deadline"} {
		r := NewRun(pb, nil, "t-1", time.Now, WithDeadline(threeSeconds))
		require.Equal(t, []string{"a", "release", "report", "child"}, names(r.Ready()))
		if stop == "cancel" {
			r.CancelRun("")
			require.Equal(t, []string{"a", "report", "child"}, r.ToCancel())
		} else {
			r.TimeOut()
			require.Equal(t, []string{"a", "report"}, r.ToCancel(), "a sub-playbook ends by the deadline it inherited")
		}
		r.Settle("a", cancelledOutcome)
		require.Empty(t, r.Ready())
		require.Equal(t, contract.StatusSkipped, r.State("late").Status, "on_failure: run alone does not run after a cancel")
		require.Equal(t, contract.StatusRunning, r.State("release").Status)
	}
}

// A step waiting for a classification when the deadline passes is
// cancelled with the deadline's error; a step Ready handed out that waits
// for a slot is withdrawn, unless it is a cleanup step.
func TestDeadlinePendingFailedAndWithdrawn(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
timeout: 3s
use_pending_failed: true
workflow:
  - {step: a, tool: {kind: shell, command: "exit 1"}}
  - {step: b, tool: {kind: noop}}
  - {step: c, on_cancel: run, tool: {kind: noop}}
`))
	require.NoError(t, err)
	r := NewRun(pb, nil, "t-1", time.Now, WithDeadline(threeSeconds))
	require.Equal(t, []string{"a", "b", "c"}, names(r.Ready()))
	r.Settle("a", contract.Outcome{Err: &contract.StepError{Type: "exit_code"}, Attempts: 1, Recovery: contract.RecoveryNoHandler})
	require.Equal(t, contract.StatusPendingFailed, r.State("a").Status)
	r.TimeOut()
	require.Equal(t, contract.StatusCancelled, r.State("a").Status)
	require.Equal(t, "timeout: the run's deadline of 3s passed while the step waited for a classification", r.State("a").Error.Type+": "+r.State("a").Error.Message)
	require.True(t, r.Withdraw(pb.Step("b")))
	require.Equal(t, "the run's deadline of 3s passed", r.State("b").SkipReason)
	require.False(t, r.Withdraw(pb.Step("c")), "a cleanup step starts")
	require.True(t, r.TimedOut())
}

// A sub-playbook's inherited deadline says whose it is.
func TestInheritedDeadlineNamesItsRun(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte("metadata: {name: t}\nworkflow:\n  - {step: a, tool: {kind: noop}}\n"))
	require.NoError(t, err)
	r := NewRun(pb, nil, "parent-1.load", time.Now, WithDeadline(contract.Deadline{At: threeSeconds.At, Timeout: "3s", SetBy: "parent-1"}))
	r.Ready()
	r.TimeOut()
	r.Settle("a", cancelledOutcome)
	r.StartEnd()
	agg := r.Finish(nil, nil, 0)
	require.Equal(t, contract.RunFailed, agg.Status)
	require.Equal(t, "parent-1", agg.Timeout.SetBy)
	require.Equal(t, "the run's deadline of 3s (inherited from parent-1) passed (on_timeout: cancel)", r.FirstFailure())
}

// After a drain, which leaves a step waiting for its classification, the
// cleanup steps wait for that step to be classified too.
func TestCleanupWaitsForAClassification(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
use_pending_failed: true
workflow:
  - {step: a, tool: {kind: shell, command: "exit 1"}}
  - {step: b, tool: {kind: shell, command: "sleep 1"}, next: release}
  - {step: release, on_cancel: run, tool: {kind: noop}}
`))
	require.NoError(t, err)
	r := NewRun(pb, nil, "t-1", time.Now)
	require.Equal(t, []string{"a", "b"}, names(r.Ready()))
	r.Settle("a", contract.Outcome{Err: &contract.StepError{Type: "exit_code"}, Attempts: 1, Recovery: contract.RecoveryNoHandler})
	r.Drain()
	r.Settle("b", contract.Outcome{Result: "done", Attempts: 1})
	require.Empty(t, r.Ready(), "a still waits for a classification")
	require.NoError(t, r.Classify("a", ClassifyFail, "", "test"))
	require.Equal(t, []string{"release"}, names(r.Ready()))
}

// A sub-playbook step is left running at the deadline; a child that wound
// down by the deadline it inherited from this run cancels the step like
// the steps the run cancelled itself, its aggregate kept in the details. A
// child that failed by a timeout of its own fails the step.
func TestChildEndedByTheInheritedDeadline(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
timeout: 3s
failure_mode: continue
workflow:
  - {step: inherited, tool: {kind: playbook, path: sub.yaml}}
  - {step: own, tool: {kind: playbook, path: sub.yaml}}
`))
	require.NoError(t, err)
	r := NewRun(pb, nil, "t-1", time.Now, WithDeadline(threeSeconds))
	require.Equal(t, []string{"inherited", "own"}, names(r.Ready()))
	r.TimeOut()
	require.Empty(t, r.ToCancel(), "sub-playbooks end by the deadline they inherited")
	childFailed := func(setBy string) contract.Outcome {
		agg := map[string]any{"status": "failed", "timeout": map[string]any{"after": "3s", "set_by": setBy}}
		return contract.Outcome{Err: &contract.StepError{Type: contract.ErrPlaybookFailed, Message: "playbook sub failed", Details: agg}, Attempts: 1, Recovery: contract.RecoveryNoHandler}
	}
	r.Settle("inherited", childFailed("t-1"))
	own := childFailed("")
	delete(own.Err.Details.(map[string]any)["timeout"].(map[string]any), "set_by")
	r.Settle("own", own)
	st := r.State("inherited")
	require.Equal(t, contract.StatusCancelled, st.Status)
	require.Equal(t, "timeout: the run's deadline of 3s passed", st.Error.Type+": "+st.Error.Message)
	require.Equal(t, "failed", st.Error.Details.(map[string]any)["status"], "the child's aggregate")
	require.Equal(t, contract.StatusFailed, r.State("own").Status, "a child's own timeout is its failure")
}

// A step that fails while the run winds down does not wait for a person
// when nothing but a person would end the wait: past the deadline, any
// step (a sub-playbook left running, a cleanup step); after a cancel or a
// drain, a cleanup step. Each fails at once and end runs.
func TestNoClassificationWaitWhileWindingDown(t *testing.T) {
	src := `metadata: {name: t}
use_pending_failed: true
timeout: 3s
workflow:
  - {step: work, tool: {kind: shell, command: "sleep 60"}}
  - {step: sub, tool: {kind: playbook, path: sub.yaml}}
  - {step: release, depends_on: [work], on_cancel: run, tool: {kind: shell, command: "exit 1"}}
`
	failed := contract.Outcome{Err: &contract.StepError{Type: "exit_code", Message: "exited with code 1"}, Attempts: 1, Recovery: contract.RecoveryNoHandler}
	cancelled := contract.Outcome{Err: &contract.StepError{Type: contract.ErrCancelled}, Attempts: 1}
	for _, c := range []struct {
		name string
		stop func(*Run)
	}{
		{"deadline", (*Run).TimeOut},
		{"cancel", func(r *Run) { r.CancelRun("test") }},
		{"drain", (*Run).Drain},
	} {
		t.Run(c.name, func(t *testing.T) {
			pb, err := spec.Parse("t.yaml", []byte(src))
			require.NoError(t, err)
			r := NewRun(pb, nil, "t-1", time.Now, WithDeadline(threeSeconds))
			require.Equal(t, []string{"work", "sub"}, names(r.Ready()))
			c.stop(r)
			r.ToCancel()
			if c.name == "drain" {
				r.Settle("work", contract.Outcome{Result: "done", Attempts: 1})
			} else {
				r.Settle("work", cancelled)
			}
			if c.name == "deadline" {
				r.Settle("sub", failed)
				require.Equal(t, contract.StatusFailed, r.State("sub").Status, "past the deadline a failure waits for no one")
			} else {
				r.Settle("sub", cancelled)
			}
			require.Equal(t, []string{"release"}, names(r.Ready()))
			r.Settle("release", failed)
			require.Equal(t, contract.StatusFailed, r.State("release").Status)
			require.True(t, r.EndReady(), "end runs")
		})
	}
	// Without a cancel, drain or deadline the failure waits as before.
	pb, err := spec.Parse("t.yaml", []byte(src))
	require.NoError(t, err)
	r := NewRun(pb, nil, "t-1", time.Now, WithDeadline(threeSeconds))
	r.Ready()
	r.Settle("sub", failed)
	require.Equal(t, contract.StatusPendingFailed, r.State("sub").Status)
}

// The child's end can reach the run before the run's own timer fires
// (both are set for the same instant): the deadline is then taken as
// passed, and the step is cancelled by it, not failed.
func TestChildEndedByTheDeadlineBeforeTheRunsTimer(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
timeout: 3s
workflow:
  - {step: inherited, tool: {kind: playbook, path: sub.yaml}}
  - {step: slow, tool: {kind: shell, command: "sleep 60"}}
`))
	require.NoError(t, err)
	r := NewRun(pb, nil, "t-1", time.Now, WithDeadline(threeSeconds))
	require.Equal(t, []string{"inherited", "slow"}, names(r.Ready()))
	agg := map[string]any{"status": "failed", "timeout": map[string]any{"after": "3s", "set_by": "t-1"}}
	r.Settle("inherited", contract.Outcome{Err: &contract.StepError{Type: contract.ErrPlaybookFailed, Details: agg}, Attempts: 1})
	require.True(t, r.TimedOut())
	require.Equal(t, contract.StatusCancelled, r.State("inherited").Status)
	require.Equal(t, contract.ErrTimeout, r.State("inherited").Error.Type)
	require.Equal(t, []string{"slow"}, r.ToCancel(), "the run winds down at once")
}

// A run's deadline is the earlier of its own timeout and the one it
// inherited; without either it has none.
func TestRunDeadlineIsTheEarlier(t *testing.T) {
	now := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	parse := func(src string) *spec.Playbook {
		pb, err := spec.Parse("t.yaml", []byte(src))
		require.NoError(t, err)
		return pb
	}
	own := parse("metadata: {name: t}\ntimeout: 3s\nworkflow: [{step: a}]\n")
	none := parse("metadata: {name: t}\nworkflow: [{step: a}]\n")
	soon := &contract.Deadline{At: now.Add(time.Second), Timeout: "1m", SetBy: "parent"}
	late := &contract.Deadline{At: now.Add(time.Hour), Timeout: "2h", SetBy: "parent"}
	require.Nil(t, RunDeadline(none, now, "t-1", nil))
	require.Equal(t, soon, RunDeadline(none, now, "t-1", soon), "inherited only")
	require.Equal(t, &contract.Deadline{At: now.Add(3 * time.Second), Timeout: "3s", SetBy: "t-1"}, RunDeadline(own, now, "t-1", nil))
	require.Equal(t, &contract.Deadline{At: now.Add(3 * time.Second), Timeout: "3s", SetBy: "t-1"}, RunDeadline(own, now, "t-1", late), "its own is earlier")
	require.Equal(t, soon, RunDeadline(own, now, "t-1", soon), "the inherited one is earlier")
}
