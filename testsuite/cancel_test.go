package testsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
)

func TestFailureModeCancel(t *testing.T) {
	parallel(t)
	r := runExample(t, "parallel_cancel.yaml")
	require.Less(t, runTook(t, r.agg), 15*time.Second, "the 30s sleepers did not hold the run")
	agg := r.agg
	require.Equal(t, "failed", agg.Status)
	require.True(t, agg.EvaluatedByEndStep)
	require.Equal(t, 1, agg.FailedStepsCount)
	for _, s := range []string{"sleeper_a", "sleeper_b"} {
		require.Equal(t, contract.StatusCancelled, agg.Steps[s].Status, s)
		require.True(t, agg.Steps[s].RoutedToEnd)
		require.Equal(t, "fails", *agg.Steps[s].OriginalFailedStep)
	}
	require.Equal(t, contract.StatusCompleted, agg.Steps["cleanup"].Status, "on_failure: run still runs")
	require.Empty(t, processesMatching("playbook-parallel-cancel"), "no sleep is left")
}

func TestFailureModeStop(t *testing.T) {
	parallel(t)
	r := runExample(t, "parallel_stop.yaml")
	agg := r.agg
	require.Equal(t, "failed", agg.Status)
	require.Equal(t, contract.StatusCompleted, agg.Steps["sleeper_a"].Status, "running steps finish")
	require.Equal(t, contract.StatusCompleted, agg.Steps["sleeper_b"].Status)
	require.Equal(t, contract.StatusSkipped, agg.Steps["after_a"].Status, "nothing new starts")
	require.Equal(t, "not started: fails failed and failure_mode is stop", agg.Steps["after_a"].SkipReason)
	// end ran after the sleepers finished.
	events := runEvents(t, agg.WorkflowID, agg.RunID)
	var order []string
	for _, e := range events {
		if e.Type == "step_completed" || (e.Type == "step_started" && e.Step == "end") {
			order = append(order, e.Type+":"+e.Step)
		}
	}
	require.Equal(t, "step_started:end", order[len(order)-1], "%v", order)
}

func runEvents(t *testing.T, workflowID, runID string) []engine.Event {
	v, err := tc.QueryWorkflow(context.Background(), workflowID, runID, contract.QueryEvents, 0)
	require.NoError(t, err)
	var events []engine.Event
	require.NoError(t, v.Get(&events))
	return events
}

// waitRunning waits until n activities of a workflow are running.
func waitRunning(t *testing.T, workflowID string, n int) {
	waitFor(t, "steps to run", func() bool {
		d, err := tc.DescribeWorkflowExecution(context.Background(), workflowID, "")
		if err != nil {
			return false
		}
		started := 0
		for _, pa := range d.GetPendingActivities() {
			if pa.GetState() == enums.PENDING_ACTIVITY_STATE_STARTED {
				started++
			}
		}
		return started == n
	})
}

func requireCancelled(t *testing.T, agg *contract.Aggregate, run client.WorkflowRun) {
	t.Helper()
	require.Equal(t, "cancelled", agg.Status, stepsSaid(agg))
	require.True(t, agg.EvaluatedByEndStep, "end ran")
	require.Equal(t, contract.StatusCompleted, agg.Steps["end"].Status)
	require.Equal(t, contract.StatusCancelled, agg.Steps["left"].Status)
	require.Equal(t, contract.StatusCancelled, agg.Steps["right"].Status)
	require.Equal(t, contract.StatusSkipped, agg.Steps["after"].Status)
	require.Equal(t, "run cancelled", agg.Steps["after"].SkipReason)
	d, err := tc.DescribeWorkflowExecution(context.Background(), run.GetID(), run.GetRunID())
	require.NoError(t, err)
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_CANCELED, d.GetWorkflowExecutionInfo().GetStatus())
	require.Empty(t, processesMatching("playbook-long-running"), "no sleep is left")
}

// stepsSaid is each step's status, attempts and error, for a failure
// message.
func stepsSaid(agg *contract.Aggregate) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(agg.Steps)) {
		st := agg.Steps[name]
		fmt.Fprintf(&b, "%s: %s after %d attempts", name, st.Status, st.Attempts)
		if st.Error != nil {
			fmt.Fprintf(&b, " (%s: %s)", st.Error.Type, st.Error.Message)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// `playbook cancel` on a run that `playbook run` follows: the follower exits
// 3 with the cancelled aggregate, and the workflow is Canceled with the
// aggregate in its details.
func TestCancelFromCLI(t *testing.T) {
	parallel(t, counts("playbook-long-running"))
	type result struct {
		code int
		out  string
	}
	done := make(chan result, 1)
	go func() {
		code, out, _ := cli(t, "run", "--address", server.Address, "--json", "--id", "cancel-cli-1", "../playbooks/long_running.yaml")
		done <- result{code, out}
	}()
	waitFor(t, "the run to start", func() bool {
		_, err := tc.DescribeWorkflowExecution(context.Background(), "cancel-cli-1", "")
		return err == nil
	})
	run := tc.GetWorkflow(context.Background(), "cancel-cli-1", "")
	waitRunning(t, run.GetID(), 2)
	code, out, errOut := cli(t, "cancel", "--address", server.Address, "--reason", "testing", "cancel-cli-1")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Cancel requested for cancel-cli-1")

	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("run did not end within 30s of the cancel")
	}
	require.Equal(t, 3, r.code, "run exits 3 for a cancelled run")
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(r.out), &agg))
	requireCancelled(t, &agg, run)
	h := history(t, run.GetID(), run.GetRunID())
	last := h.Events[len(h.Events)-1]
	require.Equal(t, enums.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED, last.GetEventType())
	var details contract.Aggregate
	require.NoError(t, json.Unmarshal(last.GetWorkflowExecutionCanceledEventAttributes().GetDetails().GetPayloads()[0].GetData(), &details))
	require.Equal(t, "cancelled", details.Status, "the Canceled event's details are the aggregate")
	replay(t, "external_cancel.yaml", run.GetID(), run.GetRunID())
}

func TestCancelFromGoClient(t *testing.T) {
	parallel(t, counts("playbook-long-running"))
	run := start(t, "../playbooks/long_running.yaml", "playbook", nil)
	waitRunning(t, run.GetID(), 2)
	require.NoError(t, tc.CancelWorkflow(context.Background(), run.GetID(), run.GetRunID()))
	requireCancelled(t, finish(t, run), run)
}

func TestCancelDrain(t *testing.T) {
	parallel(t)
	// long_running's shape, its steps held until the test lets them end:
	// status is asked while they still run, however loaded the machine.
	file := writePlaybook(t, t.TempDir(), "held.yaml", `metadata: {name: held-drain}
workload: {flag: ""}
workflow:
  - step: start
    next: [left, right]
  - step: left
    timeout: 2m
    tool: {kind: shell, command: 'while [ ! -f "$F" ]; do sleep 0.05; done', env: {F: "{{ workload.flag }}"}}
  - step: right
    timeout: 2m
    tool: {kind: shell, command: 'while [ ! -f "$F" ]; do sleep 0.05; done', env: {F: "{{ workload.flag }}"}}
  - step: after
    depends_on: [left, right]
    tool: {kind: noop, result: done}
`)
	flag := filepath.Join(t.TempDir(), "go")
	// A test that fails before it lets them end still lets them end.
	t.Cleanup(func() { _ = os.WriteFile(flag, nil, 0o644) })
	run := start(t, file, "playbook", map[string]any{"flag": flag})
	waitRunning(t, run.GetID(), 2)
	code, out, errOut := cli(t, "cancel", "--address", server.Address, "--drain", run.GetID())
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Draining")
	// While its steps finish, status says the run drains, and the state
	// query why.
	waitFor(t, "the run to say it drains", func() bool {
		agg, err := queryState(run.GetID())
		return err == nil && agg.WindingDown == contract.WindingDownDrain
	})
	code, out, errOut = cli(t, "status", "--address", server.Address, run.GetID())
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Winding down: draining: running steps finish, no new step starts; then the cleanup steps, then end\n")
	require.NoError(t, os.WriteFile(flag, nil, 0o644))
	agg := finish(t, run)
	require.Empty(t, agg.WindingDown, "a result says how the run ended, not that it wound down")
	require.Equal(t, "cancelled", agg.Status)
	require.Equal(t, contract.StatusCompleted, agg.Steps["left"].Status, "running steps finish")
	require.Equal(t, contract.StatusCompleted, agg.Steps["right"].Status)
	require.Equal(t, contract.StatusSkipped, agg.Steps["after"].Status, "nothing new starts")
	require.Equal(t, "run drained: no new step starts", agg.Steps["after"].SkipReason)
	d, err := tc.DescribeWorkflowExecution(context.Background(), run.GetID(), run.GetRunID())
	require.NoError(t, err)
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_CANCELED, d.GetWorkflowExecutionInfo().GetStatus())
}

func TestTerminateIsTheHardStop(t *testing.T) {
	parallel(t, counts("playbook-long-running"))
	run := start(t, "../playbooks/long_running.yaml", "playbook", map[string]any{"seconds": 300})
	waitRunning(t, run.GetID(), 2)
	code, out, errOut := cli(t, "terminate", "--address", server.Address, run.GetID())
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "Terminated "+run.GetID()+".\n", out)
	d, err := tc.DescribeWorkflowExecution(context.Background(), run.GetID(), run.GetRunID())
	require.NoError(t, err)
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_TERMINATED, d.GetWorkflowExecutionInfo().GetStatus())
	// The worker learns from its next heartbeat that the run is gone, and
	// kills the steps' processes.
	waitFor(t, "the steps' processes to be killed", func() bool { return len(processesMatching("playbook-long-running")) == 0 })

	// Once is enough: a run that has ended is refused as cancel refuses it.
	code, _, errOut = cli(t, "terminate", "--address", server.Address, run.GetID())
	require.Equal(t, 5, code, errOut)
	require.Equal(t, "terminate: "+run.GetID()+" already ended: terminated; nothing to terminate\n", errOut)
}

// `run` following a run that is terminated says it was, and where to see
// its steps: there is no aggregate to print.
func TestRunFollowingATerminatedRunSaysSo(t *testing.T) {
	parallel(t)
	file := writePlaybook(t, t.TempDir(), "slow.yaml", "metadata: {name: slow-term}\nworkflow:\n  - step: a\n    tool: {kind: shell, command: 'sleep 30'}\n")
	id := fmt.Sprintf("slow-term-%d", time.Now().UnixNano())
	type followed struct {
		code   int
		errOut string
	}
	done := make(chan followed, 1)
	go func() {
		code, _, errOut := cli(t, "run", "--address", server.Address, "--id", id, file)
		done <- followed{code, errOut}
	}()
	waitRunning(t, id, 1)
	require.NoError(t, tc.TerminateWorkflow(context.Background(), id, "", "test over"))
	f := <-done
	require.Equal(t, 1, f.code, f.errOut)
	require.Contains(t, f.errOut, "run: "+id+" was terminated (Temporal's hard stop: `end` did not run, and there is no aggregate); `playbook status "+id+"` shows where its steps stood")
}
