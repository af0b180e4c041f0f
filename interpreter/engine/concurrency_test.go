package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

func limitedRun(t *testing.T) *Run {
	t.Helper()
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
concurrency: {limit: 1, on_limit: fail}
workflow:
  - {step: a, tool: {kind: noop}, next: b}
  - {step: b, tool: {kind: noop}}
  - {step: cleanup, on_failure: run, tool: {kind: noop}}
`))
	require.NoError(t, err)
	return NewRun(pb, nil, "t-1", time.Now)
}

// A run its limit refused runs no step, not even a cleanup step, and
// fails saying why.
func TestRefusedRunFailsWithoutAStep(t *testing.T) {
	run := limitedRun(t)
	run.Refuse(`key "" allows 1 run at once, and t-0 holds it (on_limit: fail)`)
	require.Empty(t, run.Ready())
	require.True(t, run.EndReady())
	run.StartEnd()
	agg := run.Finish(nil, nil, 0)
	require.Equal(t, contract.RunFailed, agg.Status)
	require.Equal(t, `concurrency: key "" allows 1 run at once, and t-0 holds it (on_limit: fail)`, agg.Refused)
	require.Equal(t, agg.Refused, run.FirstFailure())
	for _, s := range []string{"a", "b", "cleanup"} {
		require.Equal(t, contract.StatusSkipped, agg.Steps[s].Status, s)
	}
}

// A queued run's aggregate says behind whom until it holds a slot.
func TestQueuedRunSaysBehindWhom(t *testing.T) {
	run := limitedRun(t)
	q := &contract.QueuedRun{Key: "web", Limit: 1, Holders: []string{"deploy-x1"}, Position: 2}
	require.Equal(t, contract.RunRunning, run.OpenStatus())
	run.Queue(q)
	require.Equal(t, q, run.Snapshot().Queued)
	require.Equal(t, contract.RunQueued, run.Snapshot().Status)
	require.Equal(t, `queued behind deploy-x1 (concurrency key "web", limit 1; 2nd in the queue)`, QueuedNote(q))
	require.Contains(t, run.DetailsMarkdown(), "queued behind deploy-x1")
	run.Queue(nil)
	require.Nil(t, run.Snapshot().Queued)
	require.Equal(t, contract.RunRunning, run.Snapshot().Status, "a run holding its slot runs")
	require.Equal(t, "concurrency_granted", run.Events()[len(run.Events())-1].Type)
}

func TestOrdinal(t *testing.T) {
	for n, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 21: "21st", 102: "102nd", 111: "111th"} {
		require.Equal(t, want, Ordinal(n))
	}
}
