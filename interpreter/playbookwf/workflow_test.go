package playbookwf

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"playbook/activities"
	"playbook/internal/quietlog"
	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// newEnv is the SDK's test workflow environment with the generic workflow,
// its loop batches and the real step activity (noop and shell steps run as
// they would on a worker); the run's ID is "run".
func newEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quietlog.New())
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Playbook, workflow.RegisterOptions{Name: contract.WorkflowName})
	env.RegisterWorkflowWithOptions(PlaybookLoopBatch, workflow.RegisterOptions{Name: contract.LoopBatchWorkflowName})
	env.RegisterWorkflowWithOptions(PlaybookLoop, workflow.RegisterOptions{Name: contract.LoopWorkflowName})
	logDir, err := os.MkdirTemp("", "playbookwf-test")
	require.NoError(t, err)
	t.Cleanup(func() {
		// A step whose activity the test environment cancelled may still be
		// writing its logs for a moment.
		require.Eventually(t, func() bool { return os.RemoveAll(logDir) == nil }, 10*time.Second, 100*time.Millisecond)
	})
	acts := &activities.Activities{LogDir: logDir}
	env.RegisterActivityWithOptions(acts.RunStep, activity.RegisterOptions{Name: contract.RunStepName})
	env.RegisterActivityWithOptions(acts.Notify, activity.RegisterOptions{Name: contract.NotifyName})
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "run"})
	return env
}

// execute runs a playbook's text to its end and returns the aggregate,
// whatever the outcome, and the workflow's error.
func execute(t *testing.T, env *testsuite.TestWorkflowEnvironment, src string) (*contract.Aggregate, error) {
	t.Helper()
	env.ExecuteWorkflow(contract.WorkflowName, contract.Input{File: "t.yaml", BaseDir: t.TempDir(), Source: src})
	require.True(t, env.IsWorkflowCompleted())
	// The test environment hands details back as they were given.
	var agg *contract.Aggregate
	err := env.GetWorkflowError()
	var appErr *temporal.ApplicationError
	var canErr *temporal.CanceledError
	switch {
	case err == nil:
		require.NoError(t, env.GetWorkflowResult(&agg))
	case errors.As(err, &canErr):
		require.NoError(t, canErr.Details(&agg))
	case errors.As(err, &appErr) && appErr.Type() == contract.FailedErrorType:
		require.NoError(t, appErr.Details(&agg))
	default:
		t.Fatalf("the run ended without an aggregate: %v", err)
	}
	return agg, err
}

const endSleeps = `metadata: {name: t}
workflow:
  - {step: a, tool: {kind: noop, result: 1}}
  - step: end
    tool: {kind: shell, command: 'sleep 1; echo reported'}
`

// cancelWhenEndStarts cancels the run as soon as end's tool starts.
func cancelWhenEndStarts(env *testsuite.TestWorkflowEnvironment) {
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityID == "end" {
			env.CancelWorkflow()
		}
	})
}

func TestCancelDuringEndEndsCancelled(t *testing.T) {
	env := newEnv(t)
	cancelWhenEndStarts(env)
	agg, err := execute(t, env, endSleeps)
	var canErr *temporal.CanceledError
	require.ErrorAs(t, err, &canErr, "the workflow ends Canceled")
	require.Equal(t, contract.RunCancelled, agg.Status)
	require.Equal(t, contract.StatusCompleted, agg.Steps["end"].Status, "end's tool finished in a disconnected context")
	require.Equal(t, "reported\n", agg.Steps["end"].Result.(map[string]any)["stdout"])
}

// Runs from before the change keep their behaviour: the cancel reached
// end's tool, which failed the run.
func TestCancelDuringEndInOldRuns(t *testing.T) {
	env := newEnv(t)
	env.OnGetVersion(changeEndDisconnected.ID, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	cancelWhenEndStarts(env)
	agg, _ := execute(t, env, endSleeps)
	require.Equal(t, contract.RunFailed, agg.Status)
	require.Equal(t, contract.ErrCancelled, agg.Steps["end"].Error.Type)
}

// A loop longer than a batch runs batch after batch, each a child with
// the ID <run>.<step>.batch-<n>; results come back in input order.
func TestLongLoopRunsInItsDriver(t *testing.T) {
	require.Equal(t, []string{"run.each.loop"}, longLoop(t, newEnv(t)))
}

// Runs from before the loop driver keep their batches.
func TestLoopRunsInBatchesInRunsFromBefore(t *testing.T) {
	env := newEnv(t)
	env.OnGetVersion(changeLoopDriver.ID, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	require.Equal(t, []string{"run.each.batch-0", "run.each.batch-1"}, longLoop(t, env))
}

// longLoop runs a loop of a batch and 3 elements, checks its results, and
// returns the child workflows it started.
func longLoop(t *testing.T, env *testsuite.TestWorkflowEnvironment) []string {
	var mu sync.Mutex
	var children []string
	env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, _ converter.EncodedValues) {
		mu.Lock()
		defer mu.Unlock()
		children = append(children, info.WorkflowExecution.ID)
	})
	n := contract.LoopBatchSize + 3
	// The driver sees whole numbers where the run does (loop.index % an
	// int workload default).
	agg, err := execute(t, env, fmt.Sprintf(`metadata: {name: t}
workload: {shards: 4}
workflow:
  - step: each
    loop: {in: "1..%d", mode: parallel, max_in_flight: 50}
    tool: {kind: shell, env: {I: "{{ item }}", S: "{{ loop.index %% workload.shards }}"}, command: 'echo $((I * 2))'}
`, n))
	require.NoError(t, err)
	// Elements that run a process go to children; noop elements are
	// decided in the workflow and need none.
	results := agg.Steps["each"].Result.([]any)
	require.Len(t, results, n)
	for i, r := range results {
		require.Equal(t, float64(2*(i+1)), r.(map[string]any)["json"], "element %d", i)
	}
	return children
}

// Under failure_mode cancel, a failed element cancels those in flight and
// starts no more.
func TestLoopCancelsOnFailure(t *testing.T) {
	env := newEnv(t)
	start := time.Now()
	agg, _ := execute(t, env, `metadata: {name: t}
failure_mode: cancel
workflow:
  - step: each
    loop: {in: [0, 1, 2, 3, 4, 5], mode: parallel, max_in_flight: 3}
    tool: {kind: shell, env: {I: "{{ item }}"}, command: 'if [ "$I" = 1 ]; then exit 1; fi; sleep 30'}
`)
	require.Less(t, time.Since(start), 20*time.Second, "the sleeping elements were cancelled")
	each := agg.Steps["each"]
	require.Equal(t, contract.StatusFailed, each.Status)
	require.Equal(t, "element 2 of 6 (index 1) failed: exited with code 1", each.Error.Message)
	require.Equal(t, 1, int(each.Error.Details.(map[string]any)["failed_elements"].(float64)))
}

// A step nobody classified within pending_timeout fails.
func TestPendingTimeoutFailsTheStep(t *testing.T) {
	env := newEnv(t)
	agg, _ := execute(t, env, `metadata: {name: t}
use_pending_failed: true
pending_timeout: 1h
workflow:
  - {step: a, tool: {kind: shell, command: "exit 3"}}
`)
	require.Equal(t, contract.RunFailed, agg.Status)
	a := agg.Steps["a"]
	require.Equal(t, contract.StatusFailed, a.Status)
	require.Equal(t, "exit_code", a.Error.Type)
	require.Equal(t, 1, a.Attempts)
}

// A step's timeout, heartbeat_timeout and retry block become its
// activity's timeouts and RetryPolicy.
func TestActivityOptionsFromTheStep(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte(`metadata: {name: t}
failure_handlers:
  - {name: h, rules: [{exit_codes: [3], max_retries: 6}]}
workflow:
  - step: full
    desc: the whole block
    timeout: 10m
    heartbeat_timeout: 45s
    retry: {max_attempts: 5, initial_delay: 2s, backoff_multiplier: 3, max_delay: 1m}
    tool: {kind: shell, command: "true"}
  - {step: bare, tool: {kind: shell, command: "true"}}
  - {step: handled, failure_handler: h, retry: 2, tool: {kind: shell, command: "true"}}
`))
	require.NoError(t, err)
	// What the workflow gives a step's activity today: the step's own
	// attempts, plus room for lost_attempts (3 by default).
	current := func(s *spec.Step) contract.StepInput {
		return contract.StepInput{Lost: &contract.LostSpec{Attempts: s.LostAttempts}}
	}
	full := activityOptions(pb.Step("full"), current(pb.Step("full")))
	require.Equal(t, "full", full.ActivityID)
	require.Equal(t, "full: the whole block", full.Summary)
	require.Equal(t, 10*time.Minute+timeoutGrace, full.StartToCloseTimeout, "the attempt's own timeout fires first")
	require.Equal(t, 45*time.Second, full.HeartbeatTimeout)
	require.Equal(t, &temporal.RetryPolicy{MaximumAttempts: 5 + 3, InitialInterval: 2 * time.Second, BackoffCoefficient: 3, MaximumInterval: time.Minute}, full.RetryPolicy, "its own 5 attempts and 3 lost ones")
	require.True(t, full.WaitForCancellation)

	bare := activityOptions(pb.Step("bare"), current(pb.Step("bare")))
	require.Equal(t, noTimeout, bare.StartToCloseTimeout, "no timeout: as long as it heartbeats")
	require.Equal(t, DefaultHeartbeatTimeout, bare.HeartbeatTimeout)
	require.Equal(t, int32(1+3), bare.RetryPolicy.MaximumAttempts, "no retry block: one attempt of its own, and 3 lost ones")

	handled := activityOptions(pb.Step("handled"), current(pb.Step("handled")))
	require.Equal(t, int32(7+3), handled.RetryPolicy.MaximumAttempts, "a rule's max_retries + 1 when it allows more, and 3 lost ones")

	require.Empty(t, full.TaskQueue, "no queue: the run's own task queue")
	queued, err := spec.Parse("q.yaml", []byte("metadata: {name: q}\nqueue: cpu\nworkflow:\n  - {step: a, tool: {kind: noop}}\n  - {step: b, queue: gpu, tool: {kind: noop}}\n"))
	require.NoError(t, err)
	require.Equal(t, "cpu", activityOptions(queued.Step("a"), current(queued.Step("a"))).TaskQueue, "the playbook's queue")
	require.Equal(t, "gpu", activityOptions(queued.Step("b"), current(queued.Step("b"))).TaskQueue, "the step's own")

	old := activityOptions(pb.Step("bare"), contract.StepInput{})
	require.Equal(t, int32(1), old.RetryPolicy.MaximumAttempts, "an input from before lost attempts were retried has no room for them")
}

// A lost worker (heartbeat timeout) and a server-enforced timeout map to
// the step errors heartbeat_timeout and execution_timeout.
func TestTimeoutsBecomeStepErrors(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte("metadata: {name: t}\nworkflow:\n  - {step: s, tool: {kind: shell, command: 'true'}}\n"))
	require.NoError(t, err)
	// Neither error carries a retry state, so outcomeOf asks no version of
	// the (absent) workflow context.
	o := outcomeOf(nil, temporal.NewHeartbeatTimeoutError(), pb.Step("s"), contract.StepInput{})
	require.Equal(t, "heartbeat_timeout", o.Err.Type)
	require.Equal(t, 1, o.Attempts)
	require.Equal(t, contract.RecoveryNoHandler, o.Recovery)
	o = outcomeOf(nil, temporal.NewTimeoutError(0, nil), pb.Step("s"), contract.StepInput{})
	require.Equal(t, "execution_timeout", o.Err.Type)
}

// A driver of local elements starts no more in a workflow task once their
// outcomes reach the task's share (LocalTaskBytes): a 1 ms timer brings
// the next task, which starts more. 600 elements of 4 KiB results take
// three shares. Runs from before keep one task throughout.
func TestLocalLoopDriverTakesItsShareOfATask(t *testing.T) {
	for _, tc := range []struct {
		name   string
		v      workflow.Version
		timers int
	}{{"new", 1, 2}, {"before", workflow.DefaultVersion, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			env.OnGetVersion(changeLocalTaskCap.ID, workflow.DefaultVersion, 1).Return(tc.v)
			var timers []string
			env.SetOnTimerScheduledListener(func(timerID string, d time.Duration) { timers = append(timers, d.String()) })
			agg, err := execute(t, env, `metadata: {name: t}
local: true
workflow:
  - step: each
    loop: {in: "1..600", mode: parallel, max_in_flight: 10}
    tool: {kind: shell, command: "head -c 4096 /dev/zero | tr '\\0' x"}
`)
			require.NoError(t, err)
			require.Equal(t, contract.StatusCompleted, agg.Steps["each"].Status, "every element ran (its result is a stub: 2.4 MB)")
			require.Len(t, timers, tc.timers, "%v", timers)
		})
	}
}

// A loop's driver continues as new at its own bound of events, or sooner
// at the server's suggestion for any reason but the count alone, or for
// the count below the server's default (its limits were lowered); runs
// from before loop-own-count heed the count too. The test environment
// holds the history's length and the suggestion where they are set, so a
// driver that stops starts its one element and continues as new.
func TestLoopDriverHeedsTheServerAsItShould(t *testing.T) {
	const src = `metadata: {name: t}
workflow:
  - step: each
    loop: {in: "1..3", mode: parallel, max_in_flight: 1}
    tool: {kind: shell, command: "true"}
`
	size := []workflow.ContinueAsNewSuggestedReason{workflow.ContinueAsNewSuggestedReasonHistorySizeTooLarge}
	count := []workflow.ContinueAsNewSuggestedReason{workflow.ContinueAsNewSuggestedReasonTooManyHistoryEvents}
	for _, tc := range []struct {
		name    string
		length  int
		reasons []workflow.ContinueAsNewSuggestedReason
		v       workflow.Version
		goesOn  bool
	}{
		{"no suggestion", 100, nil, 1, true},
		{"its own bound", loopHistoryEvents, nil, 1, false},
		{"the history's size", 100, size, 1, false},
		{"the count at its default", serverSuggestedCount, count, 1, true},
		{"the count past its default", 6000, count, 1, true},
		{"the count lowered", 2000, count, 1, false},
		{"the count, in runs from before", 6000, count, workflow.DefaultVersion, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			env.OnGetVersion(changeLoopOwnCount.ID, workflow.DefaultVersion, 1).Return(tc.v)
			env.SetCurrentHistoryLength(tc.length)
			env.SetContinueAsNewSuggested(tc.reasons != nil)
			env.SetContinueAsNewSuggestedReasons(tc.reasons)
			env.ExecuteWorkflow(contract.LoopWorkflowName, contract.LoopInput{
				File: "t.yaml", Source: src, Step: "each", Scope: map[string]any{},
				Common: contract.StepInput{WorkflowID: "run", Step: "each", Kind: "shell", BaseDir: t.TempDir()},
			})
			require.True(t, env.IsWorkflowCompleted())
			err := env.GetWorkflowError()
			if tc.goesOn {
				require.NoError(t, err)
				var o contract.Outcome
				require.NoError(t, env.GetWorkflowResult(&o))
				require.Nil(t, o.Err)
				require.Len(t, o.Result, 3)
				return
			}
			var can *workflow.ContinueAsNewError
			require.ErrorAs(t, err, &can, "the driver continues as new")
			var next contract.LoopInput
			require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
			require.Equal(t, 1, next.Next, "after its one element")
		})
	}
}

// A loop's driver keeps the side of "truncated-reads" its run took, or
// the run it continued (LoopInput.StubsAsWritten): a loop in flight when
// workers are upgraded does not change how it reads a stub part-way.
func TestLoopDriverKeepsItsRunsSideOfTruncatedReads(t *testing.T) {
	src := `metadata: {name: t}
workflow:
  - {step: big, tool: {kind: shell, command: x}, next: each}
  - step: each
    loop: {in: "[1, 2]"}
    tool: {kind: shell, command: 'echo "n=$N"', env: {N: "{{ steps.big.result.json.n }}"}}
`
	pb, err := spec.Parse("t.yaml", []byte(src))
	require.NoError(t, err)
	s := pb.Step("each")
	scope := map[string]any{"steps": map[string]any{"big": map[string]any{"status": "completed", "attempts": 1, "error": nil,
		"result": map[string]any{"json": map[string]any{"truncated": true, "bytes": 3145728.0, "budget": 1048576.0, "full_in": "x"}}}}}
	for _, asWritten := range []bool{true, false} {
		env := newEnv(t)
		in := contract.LoopInput{File: "t.yaml", Source: src, Step: "each", Scope: scope, FullIn: "x", StubsAsWritten: &asWritten,
			Common: contract.StepInput{WorkflowID: "run", RunID: "r", Step: "each", Kind: "shell", BaseDir: t.TempDir(), Retry: s.RetryBlock(), Lost: &contract.LostSpec{}}}
		env.ExecuteWorkflow(contract.LoopWorkflowName, in)
		require.True(t, env.IsWorkflowCompleted())
		require.NoError(t, env.GetWorkflowError())
		var o contract.Outcome
		require.NoError(t, env.GetWorkflowResult(&o))
		if asWritten {
			require.Nil(t, o.Err, "the run's side: the stub read as written")
			require.Equal(t, "n=\n", o.Result.([]any)[0].(map[string]any)["stdout"])
		} else {
			require.NotNil(t, o.Err)
			require.Contains(t, o.Err.Message, "reads n of a value that was cut")
		}
	}
}
