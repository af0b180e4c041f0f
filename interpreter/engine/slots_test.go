package engine

import (
	"testing"
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"

	"github.com/stretchr/testify/require"
)

func slotsRun(t *testing.T, src string) *Run {
	t.Helper()
	pb, err := spec.Parse("t.yaml", []byte(src))
	require.NoError(t, err)
	return NewRun(pb, nil, "t-1", time.Now)
}

const fiveRoots = `metadata: {name: t}
workflow:
  - {step: a, tool: {kind: noop}}
  - {step: b, tool: {kind: noop}}
  - {step: free}
  - {step: c, tool: {kind: noop}}
  - {step: d, tool: {kind: noop}}
`

// admit starts what q admits of what it has ready, as the workflow does,
// and names the steps started.
func admit(q *Slots) []string {
	var started []string
	for fresh := true; fresh; {
		var ready []*spec.Step
		ready, fresh = q.Ready()
		for _, s := range ready {
			if q.Admit(s) {
				q.Started()
				started = append(started, s.Name)
			}
		}
	}
	return started
}

func TestSlotsQueueInTheOrderStepsBecameReady(t *testing.T) {
	for _, c := range []struct {
		name    string
		capped  bool
		started [][]string
		asked   int
	}{
		{"capped", true, [][]string{{"a", "b"}, {"c"}, {"d"}}, 1},
		// A run recorded before the cap starts every ready step, as it did.
		{"recorded before the cap", false, [][]string{{"a", "b", "c", "d"}, nil, nil}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := slotsRun(t, fiveRoots)
			asked := 0
			q := run.NewSlots(2, func() bool { asked++; return c.capped })
			require.Equal(t, c.started[0], admit(q))
			require.Equal(t, contract.StatusCompleted, run.State("free").Status, "a step without a tool completes without a slot")
			for i, name := range []string{"a", "b"} {
				run.Settle(name, contract.Outcome{Attempts: 1})
				_, timer := q.Ended(name)
				require.False(t, timer)
				require.Equal(t, c.started[i+1], admit(q), "after %s ended", name)
			}
			require.Equal(t, c.asked, asked, "the cap's version is asked once in a run's life, when first reached")
		})
	}
}

func TestSlotsCancelStepsWaitingForASlotBeforeTheyStart(t *testing.T) {
	run := slotsRun(t, fiveRoots)
	q := run.NewSlots(2, func() bool { return true })
	require.Equal(t, []string{"a", "b"}, admit(q))
	run.CancelRun("cancel requested")
	running := map[string]bool{"a": true, "b": true}
	require.Equal(t, []string{"a", "b"}, q.ToCancel(func(name string) bool { return running[name] }))
	for _, name := range []string{"c", "d"} {
		st := run.State(name)
		require.Equal(t, contract.StatusCancelled, st.Status, name)
		require.Equal(t, "cancelled before it started", st.Error.Message, name)
	}
	run.Settle("a", contract.Outcome{Err: &contract.StepError{Type: contract.ErrCancelled}})
	q.Ended("a")
	require.Empty(t, admit(q), "nothing starts after the cancel")
}

func TestSlotsPendingTimeoutActsOnItsOwnSpellOnly(t *testing.T) {
	run := slotsRun(t, `metadata: {name: t}
use_pending_failed: true
pending_timeout: 1h
workflow:
  - {step: a, tool: {kind: noop}}
`)
	q := run.NewSlots(10, func() bool { return true })
	require.Equal(t, []string{"a"}, admit(q))
	fail := contract.Outcome{Err: &contract.StepError{Type: "exit_code"}, Attempts: 1, Recovery: contract.RecoveryNoHandler}
	run.Settle("a", fail)
	first, timer := q.Ended("a")
	require.True(t, timer, "a pending_failed step with a pending_timeout asks for a timer")
	require.NoError(t, q.Stalled(), "a step waiting for a person is no stall")
	require.NoError(t, run.Classify("a", ClassifyRetry, "ops", ""))
	require.Equal(t, []string{"a"}, admit(q))
	run.Settle("a", fail)
	second, timer := q.Ended("a")
	require.True(t, timer)
	require.NotEqual(t, first, second)
	q.PendingTimedOut("a", first)
	require.Equal(t, contract.StatusPendingFailed, run.State("a").Status, "the first spell's timer does nothing to the second")
	q.PendingTimedOut("a", second)
	require.Equal(t, contract.StatusFailed, run.State("a").Status)
}

func TestSlotsSayWhenTheRunStalled(t *testing.T) {
	run := slotsRun(t, fiveRoots)
	q := run.NewSlots(10, func() bool { return true })
	admit(q)
	require.NoError(t, q.Stalled(), "steps run")
	for _, name := range []string{"a", "b", "c"} {
		run.Settle(name, contract.Outcome{Attempts: 1})
		q.Ended(name)
	}
	// d's end is lost: the slots count it running no more, the run does.
	q.running--
	require.EqualError(t, q.Stalled(), "interpreter stalled: steps pending with nothing running: d")
}
