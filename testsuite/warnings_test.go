package testsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"playbook/interpreter/contract"
	"playbook/runs"
)

// A step allowed to fail fails, the steps after it run and read its
// status, and the run ends completed_with_warnings: exit 0 (1 with
// --strict), in the aggregate, the closing line, status, list --status
// and the PlaybookStatus search attribute; Temporal's status is Completed.
func TestAllowFailureEndsCompletedWithWarnings(t *testing.T) {
	parallel(t)
	r := runExample(t, "warnings.yaml")
	require.Equal(t, 0, r.code, r.stderr)
	agg := r.agg
	require.Equal(t, contract.RunCompletedWithWarnings, agg.Status)
	require.Equal(t, []string{"enrich"}, agg.WarningSteps)
	require.Equal(t, 1, agg.WarningStepsCount)
	require.Empty(t, agg.FailedSteps)
	require.Equal(t, 0, agg.FailedStepsCount)
	enrich := agg.Steps["enrich"]
	require.Equal(t, contract.StatusFailed, enrich.Status)
	require.Equal(t, contract.ErrExitCode, enrich.Error.Type)
	require.True(t, enrich.AllowedFailure)
	require.False(t, enrich.RoutedToEnd)
	require.Equal(t, "loaded 3 rows without geocodes (exit_code)", agg.Steps["load_plain"].Result, "the step after it ran and read its status and error")
	require.Equal(t, contract.StatusSkipped, agg.Steps["load_geocoded"].Status)

	d, err := tc.DescribeWorkflowExecution(context.Background(), agg.WorkflowID, agg.RunID)
	require.NoError(t, err)
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_COMPLETED, d.GetWorkflowExecutionInfo().GetStatus())

	code, out, errOut := cli(t, "status", "--address", server.Address, agg.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, fmt.Sprintf("Run %s (playbook warnings): completed_with_warnings, 0 of 4 steps failed; 1 allowed to fail (enrich)\n", agg.WorkflowID))
	require.Contains(t, out, "exit_code: exited with code 7: geocoder unavailable (allowed to fail)")

	query := fmt.Sprintf("PlaybookStatus = 'completed_with_warnings' AND WorkflowId = '%s'", agg.WorkflowID)
	waitFor(t, "the search attribute to say completed_with_warnings", func() bool {
		resp, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		return err == nil && len(resp.GetExecutions()) == 1
	})
	waitFor(t, "list --status completed_with_warnings to list the run", func() bool {
		code, out, _ := cli(t, "list", "--address", server.Address, "--status", "completed_with_warnings", "--playbook", "warnings", "--json")
		var runs []runs.Run
		if code != 0 || json.Unmarshal([]byte(out), &runs) != nil {
			return false
		}
		for _, run := range runs {
			require.Equal(t, contract.RunCompletedWithWarnings, run.Status)
			if run.WorkflowID == agg.WorkflowID {
				return true
			}
		}
		return false
	})

	// What a person running it sees, and --strict.
	for _, strict := range []bool{false, true} {
		args := []string{"run", "--address", server.Address}
		if strict {
			args = append(args, "--strict")
		}
		code, out, errOut := cli(t, append(args, "../playbooks/warnings.yaml")...)
		require.Equal(t, map[bool]int{false: 0, true: 1}[strict], code, "--strict=%v\n%s%s", strict, out, errOut)
		require.Regexp(t, `(?m)^Run warnings-\w+ completed_with_warnings: 0 of 4 steps failed; 1 allowed to fail \(enrich\)\.$`, out+errOut)
		require.Contains(t, out+errOut, "  failed: exit_code: exited with code 7: geocoder unavailable (allowed to fail: the run goes on)")
	}

	// retry follows the new run as run does, --strict included.
	for _, strict := range []bool{false, true} {
		args := []string{"retry", "--address", server.Address, "--json", agg.WorkflowID}
		if strict {
			args = append(args, "--strict")
		}
		code, out, errOut := cli(t, args...)
		require.Equal(t, map[bool]int{false: 0, true: 1}[strict], code, "retry --strict=%v\n%s", strict, errOut)
		var retried contract.Aggregate
		require.NoError(t, json.Unmarshal([]byte(out), &retried), errOut)
		require.Equal(t, contract.RunCompletedWithWarnings, retried.Status)
		require.Equal(t, contract.StatusReused, retried.Steps["extract"].Status)
	}

	// Without a warning, the same playbook completes.
	r = runExample(t, "warnings.yaml", "--set", "geocoder_up=true")
	require.Equal(t, contract.RunCompleted, r.agg.Status)
	require.Empty(t, r.agg.WarningSteps)
	require.Equal(t, "loaded 3 geocoded rows", r.agg.Steps["load_geocoded"].Result)
}

// allow_failure on a loop step, a sub-playbook step and a fail step: each
// that fails is a warning; a child that ends completed_with_warnings
// completes its parent's step (whose result says so); the on_success
// webhook is told, the aggregate it gets saying completed_with_warnings.
func TestAllowFailureOnLoopsSubPlaybooksAndRaises(t *testing.T) {
	parallel(t)
	got := make(chan map[string]any, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		got <- m
	}))
	defer hook.Close()
	dir := t.TempDir()
	write := func(name, src string) string {
		file := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
		return file
	}
	write("child.yaml", `metadata: {name: warn-child}
workflow:
  - {step: optional, tool: {kind: shell, command: "exit 4"}, allow_failure: true}
  - {step: main, tool: {kind: noop, result: done}}
`)
	write("broken.yaml", `metadata: {name: warn-broken}
workflow:
  - {step: main, tool: {kind: shell, command: "exit 5"}}
`)
	parent := write("parent.yaml", `metadata: {name: warn-parent}
workload: {hook: ""}
notify:
  on_success: {webhook: "{{ workload.hook }}"}
  on_failure: {webhook: "{{ workload.hook }}"}
workflow:
  - step: each
    loop: {in: "[1, 2, 3]", iterator: n}
    tool: {kind: shell, command: 'test "$N" != 2', env: {N: "{{ n }}"}}
    allow_failure: true
    next: [child, broken, stale]
  - {step: child, tool: {kind: playbook, path: child.yaml}}
  - {step: broken, tool: {kind: playbook, path: broken.yaml}, allow_failure: true}
  - step: stale
    tool: {kind: fail, type: stale_data, message: "{{ steps.each.status }} loop", details: {age_days: 3}}
    allow_failure: true
  - step: after
    depends_on: [child, broken, stale]
    tool: {kind: noop, result: "{{ steps.child.result.status }} {{ steps.broken.status }} {{ steps.stale.error.type }}"}
`)
	code, out, errOut := cli(t, "run", "--address", server.Address, "--json", "--set", "hook="+hook.URL, parent)
	require.Equal(t, 0, code, errOut)
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &agg))
	replay(t, "allow_failure_tree", agg.WorkflowID, agg.RunID)
	require.Equal(t, contract.RunCompletedWithWarnings, agg.Status)
	require.Equal(t, []string{"each", "broken", "stale"}, agg.WarningSteps)
	require.Empty(t, agg.FailedSteps)
	require.Equal(t, contract.StatusCompleted, agg.Steps["child"].Status, "a child completed with warnings completes the step")
	require.Equal(t, contract.ErrPlaybookFailed, agg.Steps["broken"].Error.Type)
	require.Equal(t, &contract.StepError{Type: "stale_data", Message: "failed loop", Details: map[string]any{"age_days": 3.0}}, agg.Steps["stale"].Error)
	require.Equal(t, "completed_with_warnings failed stale_data", agg.Steps["after"].Result)
	require.Len(t, agg.Notifications, 1)
	require.Equal(t, "on_success", agg.Notifications[0].Event)
	require.True(t, agg.Notifications[0].Delivered)
	told := <-got
	require.Equal(t, contract.RunCompletedWithWarnings, told["status"])
	require.Equal(t, []any{"each", "broken", "stale"}, told["warning_steps"])

	// The fail step ran in the workflow: no activity was scheduled for it.
	for _, e := range history(t, agg.WorkflowID, agg.RunID).GetEvents() {
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			require.NotEqual(t, "stale", a.GetActivityId())
		}
	}
}

// A raised error routes by its type: a spent quota (type quota) fails the
// run, whose end reads the failed steps' error types, and the step after
// it reads steps.out_of_quota.error.type; an empty input (type
// empty_input) takes the other route and the run completes.
func TestRaisedErrorRoutesOnItsType(t *testing.T) {
	parallel(t)
	r := runExample(t, "raise.yaml", "--set", "quota_left=0")
	require.Equal(t, 1, r.code)
	require.Equal(t, contract.RunFailed, r.agg.Status)
	require.Equal(t, []string{"out_of_quota"}, r.agg.FailedSteps)
	require.Equal(t, &contract.StepError{Type: "quota", Message: "the geocoder's daily quota is spent", Details: map[string]any{"service": "geocoder"}}, r.agg.Steps["out_of_quota"].Error)
	require.Equal(t, 1, r.agg.Steps["out_of_quota"].Attempts)
	require.Equal(t, "retry tomorrow", r.agg.Steps["triage"].Result)

	r = runExample(t, "raise.yaml", "--set", "rows=0")
	require.Equal(t, 0, r.code)
	require.Equal(t, contract.RunCompleted, r.agg.Status, "end tolerates an empty input")
	require.Equal(t, []string{"no_rows"}, r.agg.FailedSteps)
	require.Equal(t, &contract.StepError{Type: "empty_input", Message: "0 rows to load", Details: map[string]any{"table": "orders"}}, r.agg.Steps["no_rows"].Error)
	require.Equal(t, "nothing to load today", r.agg.Steps["triage"].Result)

	r = runExample(t, "raise.yaml")
	require.Equal(t, contract.RunCompleted, r.agg.Status)
	require.Equal(t, "loaded 5 rows", r.agg.Steps["load"].Result)
	require.Equal(t, contract.StatusSkipped, r.agg.Steps["triage"].Status)
	require.True(t, strings.HasPrefix(r.agg.WorkflowID, "raise-"))
}

// failure_mode: cancel does not act on a loop step allowed to fail: its
// other elements run to their end, where without allow_failure they are
// cancelled.
func TestAllowFailureLoopIsNotCancelledByFailureMode(t *testing.T) {
	parallel(t)
	// With allow_failure, and as a cleanup step (always: true), which
	// nothing cancels, the element still running is let finish.
	for _, key := range []string{"allow_failure: true", "always: true", ""} {
		src := `metadata: {name: warn-loop-cancel}
failure_mode: cancel
workflow:
  - step: each
    loop: {in: "[1, 2]", iterator: n, mode: parallel}
    tool: {kind: shell, command: 'if [ "$N" = 1 ]; then exit 3; fi; sleep 2', env: {N: "{{ n }}"}}
`
		if key != "" {
			src += "    " + key + "\n"
		}
		file := filepath.Join(t.TempDir(), "loop.yaml")
		require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
		code, out, errOut := cli(t, "run", "--address", server.Address, "--json", file)
		var agg contract.Aggregate
		require.NoError(t, json.Unmarshal([]byte(out), &agg), errOut)
		replay(t, map[string]string{"allow_failure: true": "loop_allow_failure", "always: true": "loop_cleanup"}[key], agg.WorkflowID, agg.RunID)
		cancelRequested := false
		for _, e := range history(t, agg.WorkflowID, agg.RunID).GetEvents() {
			cancelRequested = cancelRequested || e.GetEventType() == enums.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED
		}
		require.Equal(t, contract.StatusFailed, agg.Steps["each"].Status)
		switch key {
		case "allow_failure: true":
			require.Equal(t, 0, code, errOut)
			require.Equal(t, contract.RunCompletedWithWarnings, agg.Status)
			require.False(t, cancelRequested, "the element still running was not cancelled")
		case "always: true":
			require.Equal(t, 1, code, errOut)
			require.False(t, cancelRequested, "a cleanup step's element still running was not cancelled")
		default:
			require.Equal(t, 1, code, errOut)
			require.True(t, cancelRequested, "without allow_failure, failure_mode cancel cancels the element still running")
		}
	}
}
