package testsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"

	"playbook/internal/quietlog"
	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
	"playbook/worker"
)

// keys(), values() and toPairs() go in key order, and of several failing
// templates the first by key is reported: the run decides as sorted order
// says, its loop's results follow the sorted keys, and the recorded history
// replays 20 times (with Go's map order, nearly every replay would take
// another branch).
func TestMapOrderIsKeyOrder(t *testing.T) {
	parallel(t)
	r := runExample(t, "map_order.yaml")
	agg := r.agg
	require.Equal(t, []string{"render"}, agg.FailedSteps)
	require.Equal(t, contract.StatusCompleted, agg.Steps["sorted"].Status)
	require.Equal(t, contract.StatusSkipped, agg.Steps["unsorted"].Status)
	require.Equal(t, contract.StatusCompleted, agg.Steps["first_key"].Status)
	require.Equal(t, contract.StatusSkipped, agg.Steps["other_key"].Status)
	require.Contains(t, agg.Steps["render"].Error.Message, "int(workload.words.w01)")
	var got []string
	for _, res := range agg.Steps["each"].Result.([]any) {
		got = append(got, strings.TrimSpace(res.(map[string]any)["stdout"].(string)))
	}
	var want []string
	for i := 1; i <= 20; i++ {
		want = append(want, fmt.Sprintf("k%02d", i))
	}
	require.Equal(t, want, got, "the loop ran over the keys in order")

	h := readHistory(t, filepath.Join("testdata", "histories", "v1", "map_order.json"))
	for i := range 20 {
		require.NoError(t, worker.Replay(h, quietlog.New()), "replay %d", i+1)
	}
}

// runJSON runs a playbook file with `run --json`, replays its history, and
// returns its aggregate.
func runJSON(t *testing.T, args ...string) (int, *contract.Aggregate) {
	t.Helper()
	code, out, errOut := cli(t, append([]string{"run", "--address", server.Address, "--json"}, args...)...)
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &agg), "stderr:\n%s", errOut)
	replay(t, "", agg.WorkflowID, agg.RunID)
	return code, &agg
}

// --set db.host=x and --input {"db": {"host": ...}} keep db.port.
func TestOverridesDeepMergeIntoTheWorkload(t *testing.T) {
	parallel(t)
	file := writePlaybook(t, t.TempDir(), "merge.yaml", `metadata: {name: merge}
workload:
  db: {host: localhost, port: 5432}
workflow:
  - {step: show, tool: {kind: noop, result: "{{ workload.db }}"}}
`)
	code, agg := runJSON(t, "--set", "db.host=db.internal", file)
	require.Equal(t, 0, code)
	require.Equal(t, map[string]any{"host": "db.internal", "port": 5432.0}, agg.Steps["show"].Result)

	input := filepath.Join(t.TempDir(), "in.json")
	require.NoError(t, os.WriteFile(input, []byte(`{"db": {"host": "from-input"}}`), 0o644))
	code, agg = runJSON(t, "--input", input, file)
	require.Equal(t, 0, code)
	require.Equal(t, map[string]any{"host": "from-input", "port": 5432.0}, agg.Steps["show"].Result)
}

// cancel --reason: the run records it (aggregate, events), status shows
// it, and Temporal's history has it on the cancel request.
func TestCancelReasonIsRecorded(t *testing.T) {
	parallel(t, carries("playbook-long-running"))
	run := start(t, "../playbooks/long_running.yaml", "playbook", nil)
	waitRunning(t, run.GetID(), 2)
	code, _, errOut := cli(t, "cancel", "--address", server.Address, "--reason", "maintenance window", run.GetID())
	require.Equal(t, 0, code, errOut)
	agg := finish(t, run)
	require.Equal(t, "cancelled", agg.Status)
	require.Equal(t, "maintenance window", agg.CancelReason)

	var requested *engine.Event
	for _, e := range runEvents(t, run.GetID(), run.GetRunID()) {
		if e.Type == "cancel_requested" {
			requested = &e
		}
	}
	require.NotNil(t, requested)
	require.Equal(t, "maintenance window", requested.Data["cancel_reason"])

	code, out, errOut := cli(t, "status", "--address", server.Address, run.GetID())
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Cancel reason: maintenance window\n")

	h := history(t, run.GetID(), run.GetRunID())
	var cause string
	for _, e := range h.Events {
		if e.GetEventType() == enums.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED {
			cause = e.GetWorkflowExecutionCancelRequestedEventAttributes().GetCause()
		}
	}
	require.Equal(t, "maintenance window", cause)
}

// A cancel that arrives while end's tool runs: end finishes (its tool is
// not cancelled) and the run ends cancelled.
func TestCancelWhileEndRuns(t *testing.T) {
	parallel(t)
	file := writePlaybook(t, t.TempDir(), "end_cancel.yaml", `metadata: {name: end-cancel}
workflow:
  - {step: a, tool: {kind: noop, result: 1}}
  - step: end
    tool: {kind: shell, command: 'sleep 3; echo reported # playbook-end-cancel'}
`)
	run := start(t, file, "playbook", nil)
	waitFor(t, "end's tool to run", func() bool {
		d, err := tc.DescribeWorkflowExecution(context.Background(), run.GetID(), "")
		if err != nil {
			return false
		}
		for _, pa := range d.GetPendingActivities() {
			if pa.GetActivityId() == "end" && pa.GetState() == enums.PENDING_ACTIVITY_STATE_STARTED {
				return true
			}
		}
		return false
	})
	require.NoError(t, tc.CancelWorkflow(context.Background(), run.GetID(), ""))
	agg := finish(t, run)
	require.Equal(t, "cancelled", agg.Status)
	require.Equal(t, contract.StatusCompleted, agg.Steps["end"].Status, "end's tool finished")
	require.Equal(t, "reported\n", agg.Steps["end"].Result.(map[string]any)["stdout"])
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_CANCELED, workflowStatus(t, run.GetID()))
}

// retry reuses a step with the branch its run took (its when, evaluated
// again where the reused step made no attempt, would flip), and runs a
// cleanup with on_failure: run again after its failed upstream.
func TestRetryKeepsArcsAndRerunsTheCleanup(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	file := writePlaybook(t, t.TempDir(), "retry_arcs.yaml", `metadata: {name: retry-arcs}
workload: {dir: /tmp}
workflow:
  - step: check
    retry: {max_attempts: 2, initial_delay: 100ms}
    tool:
      kind: shell
      env: {D: "{{ workload.dir }}"}
      command: 'n=$(cat "$D/n" 2>/dev/null || echo 0); echo $((n+1)) > "$D/n"; [ "$n" -ge 1 ]'
    next:
      - {when: "steps.check.attempts > 1", then: [careful]}
      - else: [quick]
  - step: careful
    tool: {kind: shell, env: {D: "{{ workload.dir }}"}, command: 'test -f "$D/ok"'}
  - {step: quick, tool: {kind: noop}}
  - step: cleanup
    depends_on: [careful]
    on_failure: run
    tool: {kind: shell, env: {D: "{{ workload.dir }}"}, command: 'echo cleaned >> "$D/cleanup.log"'}
`)
	code, first := runJSON(t, "--set", "dir="+dir, file)
	require.Equal(t, 1, code)
	require.Equal(t, []string{"careful"}, first.FailedSteps)
	require.Equal(t, []string{"careful"}, first.Steps["check"].TakenNext)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "ok"), nil, 0o644))
	code, out, errOut := cli(t, "retry", "--address", server.Address, "--json", first.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "reusing 1 completed step: check")
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &agg))
	replay(t, "", agg.WorkflowID, agg.RunID)
	require.Equal(t, contract.StatusReused, agg.Steps["check"].Status)
	require.Equal(t, contract.StatusCompleted, agg.Steps["careful"].Status, "the reused check's branch is taken as it was")
	require.Equal(t, contract.StatusSkipped, agg.Steps["quick"].Status)
	require.Equal(t, contract.StatusCompleted, agg.Steps["cleanup"].Status, "the cleanup ran again")
	log, err := os.ReadFile(filepath.Join(dir, "cleanup.log"))
	require.NoError(t, err)
	require.Equal(t, "cleaned\ncleaned\n", string(log))
}

// Checks stricter than earlier versions refuse a playbook where it is
// submitted, with one line each.
func TestSubmitChecksRefuse(t *testing.T) {
	parallel(t)
	bound := writePlaybook(t, t.TempDir(), "bound.yaml", "metadata: {name: bound}\nworkflow:\n  - {step: a, tool: {kind: shell, command: 'true'}, retry: 3000000000}\n")
	code, _, errOut := cli(t, "validate", bound)
	require.Equal(t, 2, code)
	require.Equal(t, bound+`:3: step "a": retry: a step makes at most 1000000 attempts; this asks for 3000000000`+"\n", errOut)

	loop := writePlaybook(t, t.TempDir(), "loop.yaml", "metadata: {name: loop}\nworkflow:\n  - step: a\n    loop: {in: [1, 2]}\n    tool: {kind: playbook, path: sub.yaml}\n")
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(loop), "sub.yaml"), []byte("metadata: {name: sub}\nworkflow:\n  - {step: s}\n"), 0o644))
	code, _, errOut = cli(t, "run", "--address", server.Address, loop)
	require.Equal(t, 2, code)
	require.Equal(t, loop+`:3: step "a": a playbook tool cannot run in a loop: write the loop inside the sub-playbook, or list its runs as steps`+"\n", errOut)
}
