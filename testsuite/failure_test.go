package testsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"playbook/activities"
	"playbook/internal/proctest"
	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
)

// start submits a playbook without following it, as another client would.
func start(t *testing.T, file, queue string, workload map[string]any) client.WorkflowRun {
	t.Helper()
	return startOn(t, tc, file, "", queue, workload)
}

// finish waits for a run and returns its aggregate, whatever its outcome.
func finish(t *testing.T, run client.WorkflowRun) *contract.Aggregate {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var agg contract.Aggregate
	err := run.Get(ctx, &agg)
	if err != nil {
		h := history(t, run.GetID(), run.GetRunID())
		last := h.Events[len(h.Events)-1]
		details := last.GetWorkflowExecutionFailedEventAttributes().GetFailure().GetApplicationFailureInfo().GetDetails()
		if last.GetEventType() == enums.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED {
			details = last.GetWorkflowExecutionCanceledEventAttributes().GetDetails()
		}
		require.NotNil(t, details, "run %s ended without an aggregate: %v", run.GetID(), err)
		require.NoError(t, json.Unmarshal(details.GetPayloads()[0].GetData(), &agg))
	}
	replay(t, "", run.GetID(), run.GetRunID())
	return &agg
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	proctest.WaitFor(t, what, 60*time.Second, cond)
}

func freePort(t *testing.T) int { return proctest.FreePort(t) }

func listening(addr string) bool { return proctest.Listening(addr) }

func pendingSteps(t *testing.T, run client.WorkflowRun) []engine.PendingStep {
	v, err := tc.QueryWorkflow(context.Background(), run.GetID(), run.GetRunID(), contract.QueryPending)
	if err != nil {
		return nil
	}
	var out []engine.PendingStep
	require.NoError(t, v.Get(&out))
	return out
}

func TestExitCodeRulesAndRecoveryScript(t *testing.T) {
	parallel(t)
	r := runExample(t, "exit_codes.yaml")
	require.Equal(t, 1, r.code)
	mount := r.agg.Steps["mount"]
	require.Equal(t, contract.StatusFailed, mount.Status)
	require.Equal(t, 3, mount.Attempts, "the rule for code 10 (max_retries 2) wins over the catch-all listed first")
	require.Equal(t, contract.RecoveryMaxRetriesExceeded, mount.Recovery)
	var outcomes []string
	for _, a := range mount.AttemptErrors {
		outcomes = append(outcomes, fmt.Sprintf("%d:%s", a.Attempt, a.Recovery))
		if a.Recovery == contract.RecoveryRetried {
			require.Equal(t, 0, *a.RecoveryExitCode)
		}
	}
	require.Equal(t, []string{"1:retried", "2:retried", "3:max_retries_exceeded"}, outcomes)

	dir := activities.StepLogDir(logDir, r.agg.WorkflowID, r.agg.RunID, "mount")
	calls := readLog(t, r.agg.WorkflowID, "mount", "recovery.calls")
	require.Equal(t, fmt.Sprintf("%[1]s mount 1 10 %[2]s\n%[1]s mount 2 10 %[2]s\n", r.agg.WorkflowID, dir), calls,
		"the recovery script ran twice, before each retry, with the run, step, attempt, exit code and log dir")

	other := r.agg.Steps["other"]
	require.Equal(t, 1, other.Attempts, "the catch-all allows no retry")
	require.Equal(t, contract.RecoveryMaxRetriesExceeded, other.Recovery)
}

// A recovery script that runs longer than the step's heartbeat timeout
// does not lose the attempt: the attempt heartbeats while it runs.
func TestLongRecoveryScriptKeepsItsAttempt(t *testing.T) {
	// Serial: times in seconds against the wall clock, a heartbeat timeout of 1s (see parallel).
	file := writePlaybook(t, t.TempDir(), "playbook.yaml", `metadata: {name: slow-recovery}
failure_handlers:
  - name: slow
    rules:
      - exit_codes: [3]
        max_retries: 1
        recovery_script: 'sleep 4'
workflow:
  - step: flaky
    heartbeat_timeout: 1s
    tool: { kind: shell, command: 'test "$PLAYBOOK_ATTEMPT" = 2 || exit 3' }
    failure_handler: slow
`)
	code, agg := runJSON(t, file)
	require.Equal(t, 0, code)
	s := agg.Steps["flaky"]
	require.Equal(t, contract.StatusCompleted, s.Status)
	require.Equal(t, 2, s.Attempts)
	require.Len(t, s.AttemptErrors, 1, "attempt 1's failure, no lost attempt")
	first := s.AttemptErrors[0]
	require.False(t, first.Lost, "attempt 1 was lost: %+v", first.Error)
	require.Equal(t, contract.RecoveryRetried, first.Recovery)
	require.NotNil(t, first.RecoveryExitCode)
	require.Equal(t, 0, *first.RecoveryExitCode)
}

// A run cancelled while a recovery script runs stops the script, and the
// step ends cancelled, as it would during its tool: the attempt that failed
// is not retried, nor counted failed.
func TestCancelDuringRecoveryScript(t *testing.T) {
	parallel(t)
	mark := filepath.Join(t.TempDir(), "recovering")
	file := writePlaybook(t, t.TempDir(), "playbook.yaml", `metadata: {name: cancel-recovery}
workload: {mark: ""}
failure_handlers:
  - name: slow
    rules:
      - exit_codes: [3]
        max_retries: 1
        recovery_script: 'touch "$MARK"; sleep 60'
workflow:
  - step: flaky
    tool: { kind: shell, command: 'exit 3', env: { MARK: "{{ workload.mark }}" } }
    failure_handler: slow
`)
	run := start(t, file, "playbook", map[string]any{"mark": mark})
	proctest.WaitFor(t, "the recovery script to run", 30*time.Second, func() bool { _, err := os.Stat(mark); return err == nil })
	require.NoError(t, tc.CancelWorkflow(context.Background(), run.GetID(), run.GetRunID()))
	agg := finish(t, run)
	require.Equal(t, "cancelled", agg.Status)
	require.Equal(t, contract.StatusCancelled, agg.Steps["flaky"].Status)
	require.Equal(t, 1, agg.Steps["flaky"].Attempts)
}

func TestPendingFailedClassifyRetry(t *testing.T) {
	parallel(t)
	ready := filepath.Join(t.TempDir(), "ready")
	run := start(t, "../playbooks/pending_failed.yaml", "playbook", map[string]any{"ready_file": ready})
	waitFor(t, "check to be pending_failed", func() bool { return len(pendingSteps(t, run)) == 1 })

	v, err := tc.QueryWorkflow(context.Background(), run.GetID(), run.GetRunID(), contract.QueryState)
	require.NoError(t, err)
	var state contract.Aggregate
	require.NoError(t, v.Get(&state))
	require.Equal(t, "running", state.Status, "the run is not finished")
	require.Equal(t, contract.StatusPendingFailed, state.Steps["check"].Status)
	require.Equal(t, contract.StatusPending, state.Steps["publish"].Status, "the dependant waits")

	code, out, errOut := cli(t, "pending", "--address", server.Address, run.GetID())
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "check")
	require.Contains(t, out, "no_handler")
	require.Contains(t, out, "input not ready: "+ready, "the stderr tail helps decide")

	code, _, errOut = cli(t, "classify", "--address", server.Address, run.GetID(), "publish", "retry")
	require.Equal(t, 2, code)
	require.Equal(t, `classify: step "publish" is pending, not pending_failed: only a pending_failed step can be classified`+"\n", errOut)
	code, _, errOut = cli(t, "classify", "--address", server.Address, run.GetID(), "nosuch", "skip")
	require.Equal(t, 2, code)
	require.Equal(t, `classify: no step "nosuch" in playbook pending-failed`+"\n", errOut)

	require.NoError(t, os.WriteFile(ready, nil, 0o644))
	code, out, errOut = cli(t, "classify", "--address", server.Address, run.GetID(), "check", "retry")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "step check classified retry: now pending\n", out)

	agg := finish(t, run)
	replay(t, "pending_failed_classified.yaml", run.GetID(), run.GetRunID())
	require.Equal(t, "completed", agg.Status)
	require.Equal(t, contract.StatusCompleted, agg.Steps["check"].Status)
	require.Equal(t, 2, agg.Steps["check"].Attempts, "attempts add up across the classification")
	require.Equal(t, "published", agg.Steps["publish"].Result)
	require.Equal(t, "input not ready: "+ready+"\n", readLog(t, run.GetID(), "check", "attempt-1.stderr"), "the re-run kept attempt 1's log")
	require.Equal(t, "", readLog(t, run.GetID(), "check", "attempt-2.stderr"), "and numbered its own attempt 2")
}

func TestPendingFailedClassifySkipReachesEnd(t *testing.T) {
	parallel(t)
	run := start(t, "../playbooks/pending_failed.yaml", "playbook", nil)
	waitFor(t, "check to be pending_failed", func() bool { return len(pendingSteps(t, run)) == 1 })
	code, _, errOut := cli(t, "classify", "--address", server.Address, run.GetID(), "check", "skip")
	require.Equal(t, 0, code, errOut)
	agg := finish(t, run)
	require.Equal(t, "completed", agg.Status, "a skipped step is not a failed one")
	require.Equal(t, contract.StatusSkipped, agg.Steps["check"].Status)
	require.Equal(t, contract.StatusSkipped, agg.Steps["publish"].Status)
}

func TestPendingTimeoutFailsTheStep(t *testing.T) {
	parallel(t)
	file := filepath.Join(t.TempDir(), "pending_timeout.yaml")
	src, err := os.ReadFile("../playbooks/pending_failed.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, []byte(strings.Replace(string(src), "use_pending_failed: true", "use_pending_failed: true\npending_timeout: 1s", 1)), 0o644))
	agg := finish(t, start(t, file, "playbook", nil))
	require.Equal(t, "failed", agg.Status)
	require.Equal(t, contract.StatusFailed, agg.Steps["check"].Status)
	require.True(t, agg.Steps["check"].RoutedToEnd)
}

// A worker killed in the middle of a step loses the attempt after
// heartbeat_timeout; its step's processes die with it; the step is retried
// on another worker and the run completes, with the lost attempt on record.
func TestWorkerKilledMidStep(t *testing.T) {
	parallel(t)
	bin := playbookBinary(t)
	const queue = "kill-test"
	marker := fmt.Sprintf("playbook-kill-test-%d", time.Now().UnixNano())
	file := filepath.Join(t.TempDir(), "long.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`metadata: {name: long}
workflow:
  - step: long
    heartbeat_timeout: 2s
    retry: {max_attempts: 2, initial_delay: 100ms}
    tool: {kind: shell, command: "sleep 3 # `+marker+`"}
`), 0o644))
	workerLogs := t.TempDir()
	startWorker := func() *exec.Cmd {
		cmd := exec.Command(bin, "worker", "--address", server.Address, "--task-queue", queue, "--log-dir", workerLogs)
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		require.NoError(t, cmd.Start())
		return cmd
	}
	first := startWorker()
	run := start(t, file, queue, nil)
	waitFor(t, "the step to start on the first worker", func() bool {
		d, err := tc.DescribeWorkflowExecution(context.Background(), run.GetID(), run.GetRunID())
		return err == nil && len(d.GetPendingActivities()) == 1 && d.GetPendingActivities()[0].GetState() == enums.PENDING_ACTIVITY_STATE_STARTED
	})
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	_ = first.Wait()
	// The dead worker's step dies with it: the keeper of its process
	// groups saw the worker go.
	waitForNoProcess(t, marker, 5*time.Second)
	second := startWorker()
	defer func() { _ = second.Process.Kill(); _ = second.Wait() }()

	agg := finish(t, run)
	require.Equal(t, "completed", agg.Status)
	long := agg.Steps["long"]
	require.Equal(t, 2, long.Attempts)
	require.Len(t, long.AttemptErrors, 1)
	require.Equal(t, 1, long.AttemptErrors[0].Attempt)
	require.Equal(t, "heartbeat_timeout", long.AttemptErrors[0].Error.Type)
	if st, err := os.Stat(filepath.Join(activities.RunLogDir(workerLogs, run.GetID(), ""), "long", "attempt-2.stdout")); err == nil {
		t.Logf("attempt 2 started %s after the kill (heartbeat_timeout 2s)", st.ModTime().Sub(killed).Round(100*time.Millisecond))
	}
}

func TestWebhookReceivesFailedAggregate(t *testing.T) {
	parallel(t)
	got := make(chan map[string]any, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		body["event_header"] = r.Header.Get("X-Playbook-Event")
		got <- body
	}))
	defer srv.Close()
	r := runExample(t, "notify.yaml", "--set", "webhook="+srv.URL+"/hook")
	require.Equal(t, 1, r.code)
	select {
	case body := <-got:
		require.Equal(t, "failed", body["status"])
		require.Equal(t, []any{"doomed"}, body["failed_steps"])
		require.Equal(t, r.agg.WorkflowID, body["workflow_id"])
		require.Equal(t, "on_failure", body["event_header"])
	default:
		t.Fatal("the webhook was not called")
	}
	require.Equal(t, []contract.Notification{{Event: "on_failure", Webhook: srv.URL + "/hook", Delivered: true}}, r.agg.Notifications)
}

func TestFailingWebhookDoesNotChangeTheOutcome(t *testing.T) {
	parallel(t)
	r := runExample(t, "notify.yaml", "--set", "webhook=http://127.0.0.1:1/hook")
	require.Equal(t, 1, r.code)
	require.Equal(t, "failed", r.agg.Status)
	require.Len(t, r.agg.Notifications, 1)
	require.False(t, r.agg.Notifications[0].Delivered)
	require.Contains(t, r.agg.Notifications[0].Error, "127.0.0.1:1")
}

func TestPythonStep(t *testing.T) {
	parallel(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	r := runExample(t, "python.yaml")
	require.Equal(t, "completed", r.agg.Status)
	require.Equal(t, map[string]any{"count": 3.0, "mean": 6.0}, r.agg.Steps["stats"].Result)
	require.Equal(t, "mean of 3 values is 6", r.agg.Steps["report"].Result)
}

func TestStructuredError(t *testing.T) {
	parallel(t)
	r := runExample(t, "structured_error.yaml")
	upload := r.agg.Steps["upload"]
	require.Equal(t, "exit_code", upload.Error.Type)
	require.Equal(t, "quota exceeded for bucket reports", upload.Error.Message)
	require.Equal(t, map[string]any{"bucket": "reports", "used_gb": 100.0}, upload.Error.Details.(map[string]any)["supplied"])
}

func TestLogsCommand(t *testing.T) {
	parallel(t)
	r := runExample(t, "flaky.yaml")
	code, out, errOut := cli(t, "logs", "--log-dir", logDir, "--attempt", "2", r.agg.WorkflowID, "flaky")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "== attempt 2 stderr")
	require.Contains(t, out, "attempt 2\n")
	code, out, _ = cli(t, "logs", "--log-dir", logDir, r.agg.WorkflowID, "flaky")
	require.Equal(t, 0, code)
	require.Contains(t, out, "== attempt 3 stdout", "the last attempt by default")
}

// Acceptance (#31): a retry budget of 2 s on an always-failing step stops
// retrying after 2 to 3 s of attempts, though max_attempts allows more,
// and the step's error says the budget was spent.
func TestRetryBudgetStopsRetrying(t *testing.T) {
	// Serial: times in seconds against the wall clock, a retry budget of 2s (see parallel).
	file := writePlaybook(t, t.TempDir(), "budget.yaml", `metadata: {name: budget}
workflow:
  - step: always
    tool: {kind: shell, command: "exit 1"}
    retry: {max_attempts: 100, initial_delay: 400ms, backoff_multiplier: 1, jitter: false, max_duration: 2s}
`)
	began := time.Now()
	code, agg := runJSON(t, file)
	took := time.Since(began)
	require.Equal(t, 1, code)
	st := agg.Steps["always"]
	require.Equal(t, contract.StatusFailed, st.Status)
	require.Regexp(t, `\(retry budget of 2s spent after \d+ attempts\)$`, st.Error.Message)
	require.GreaterOrEqual(t, st.Attempts, 4)
	require.LessOrEqual(t, st.Attempts, 7)
	require.GreaterOrEqual(t, took, 2*time.Second, "attempts went on until the budget was spent")
	require.Less(t, took, 10*time.Second)
}
