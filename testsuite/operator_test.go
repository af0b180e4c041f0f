package testsuite

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"playbook/activities"
)

// lockedBuffer is a process's output, read while the process writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// observedWorker starts a real `playbook worker` on the shared server
// serving its endpoint on a free port; it returns the endpoint's URL.
func observedWorker(t *testing.T, queue, logDir string, extra ...string) (url string, stderr *lockedBuffer) {
	t.Helper()
	url, stderr, _ = startObservedWorker(t, queue, logDir, extra...)
	return url, stderr
}

func startObservedWorker(t *testing.T, queue, logDir string, extra ...string) (url string, stderr *lockedBuffer, cmd *exec.Cmd) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd, stderr = runWorker(t, append([]string{"--task-queue", queue, "--log-dir", logDir,
		"--metrics-address", addr, "--drain-timeout", "1s"}, extra...))
	url = "http://" + addr
	require.Eventually(t, func() bool { code, _ := httpGet(url + "/readyz"); return code == http.StatusOK },
		60*time.Second, 100*time.Millisecond, "the worker gets ready; stderr:\n%s", stderr)
	return url, stderr, cmd
}

// runWorker runs `playbook worker` on the test's server with flags and
// more environment until the test ends, when it is stopped as an operator
// would (SIGTERM, then a kill after 30 s; workerProcess kills at once);
// its stderr is kept for messages.
func runWorker(t *testing.T, flags []string, env ...string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(playbookBinary(t), append([]string{"worker", "--address", server.Address}, flags...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return cmd, stderr
}

func httpGet(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A step fails once and is retried; its second attempt runs a while.
const retriedSlowStep = `metadata:
  name: ops
workflow:
  - step: work
    tool: { kind: shell, command: 'echo "out-$PLAYBOOK_ATTEMPT"; echo "err-$PLAYBOOK_ATTEMPT" >&2; [ "$PLAYBOOK_ATTEMPT" -ge 2 ] && sleep %s' }
    retry: { max_attempts: 3, initial_delay: 100ms }
`

// Acceptance 3: during a run, the worker's metrics endpoint shows the
// engine's step counters and the SDK's own worker metrics; its JSON log
// has a line per step transition.
func TestWorkerServesMetricsDuringARun(t *testing.T) {
	parallel(t)
	queue := "ops-metrics"
	url, stderr := observedWorker(t, queue, t.TempDir(), "--log-format", "json", "--log-level", "debug")
	file := writePlaybook(t, t.TempDir(), "ops.yaml", fmt.Sprintf(retriedSlowStep, "4"))
	code, out, errOut := cli(t, "run", "--address", server.Address, "--task-queue", queue, "--id", "ops-metrics-1", "--detach", file)
	require.Equal(t, 0, code, out+errOut)

	engine := regexp.MustCompile(`(?m)^playbook_step_attempts_total\{[^}]*tool_kind="shell"[^}]*\} 2$`)
	sdk := regexp.MustCompile(`(?m)^temporal_\w*activity\w*\{`)
	var metrics string
	require.Eventually(t, func() bool {
		_, metrics = httpGet(url + "/metrics")
		return engine.MatchString(metrics) && sdk.MatchString(metrics)
	}, 30*time.Second, 200*time.Millisecond, "metrics while the second attempt runs")
	require.Regexp(t, `(?m)^playbook_steps_started_total\{[^}]*tool_kind="shell"[^}]*\} 1$`, metrics)
	require.Regexp(t, `(?m)^playbook_step_attempts_failed_total\{[^}]*tool_kind="shell"[^}]*\} 1$`, metrics)
	require.Regexp(t, `(?m)^playbook_step_attempt_duration_seconds_bucket\{[^}]*outcome="retried"`, metrics)
	desc, err := tc.DescribeWorkflowExecution(context.Background(), "ops-metrics-1", "")
	require.NoError(t, err)
	require.Len(t, desc.GetPendingActivities(), 1, "the metrics were read during the run")

	require.NoError(t, tc.GetWorkflow(context.Background(), "ops-metrics-1", "").Get(context.Background(), nil))
	completed := regexp.MustCompile(`(?m)^playbook_steps_completed_total\{[^}]*tool_kind="shell"[^}]*\} 1$`)
	require.Eventually(t, func() bool {
		_, metrics = httpGet(url + "/metrics")
		return completed.MatchString(metrics)
	}, 10*time.Second, 200*time.Millisecond, "the completed step is counted")

	// One JSON line per transition, with the run, the step and the attempt.
	seen := stepEvents(t, stderr.String(), "ops-metrics-1", "work")
	runID := desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	require.Contains(t, stderr.String(), `"run_id":"`+runID+`"`)
	require.Equal(t, []string{"step_started 1", "step_retried 1", "step_started 2", "step_completed 2"}, seen)
}

// Acceptance 4: an attempt's logs are fetched from the worker process that
// ran it, whatever log directory `playbook logs` is given.
// A worker started with a logs token serves its logs only to a caller
// that sends it: `playbook logs` says so in one line without it, and
// prints the logs with it.
func TestRemoteLogsNeedTheWorkersToken(t *testing.T) {
	// Serial: t.Setenv (the logs token) (see parallel).
	queue := "ops-logs-token"
	t.Setenv("PLAYBOOK_LOGS_TOKEN", "")
	url, _ := observedWorker(t, queue, t.TempDir(), "--logs-token", "s3cret")
	file := writePlaybook(t, t.TempDir(), "ops.yaml", `metadata: {name: token}
workflow:
  - step: say
    tool: { kind: shell, command: 'echo hello; printf oops >&2' }
`)
	code, out, errOut := cli(t, "run", "--address", server.Address, "--task-queue", queue, "--id", "ops-logs-token-1", file)
	require.Equal(t, 0, code, out+errOut)

	d, err := tc.DescribeWorkflowExecution(context.Background(), "ops-logs-token-1", "")
	require.NoError(t, err)
	runID := "?run_id=" + d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	code, out, errOut = cli(t, "logs", "--address", server.Address, "--log-dir", t.TempDir(), "ops-logs-token-1", "say")
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Equal(t, "logs: attempt 1: "+url+"/logs/ops-logs-token-1/say/1/stdout"+runID+": 401 Unauthorized: this worker's logs need its token (PLAYBOOK_LOGS_TOKEN)\n", errOut)

	t.Setenv("PLAYBOOK_LOGS_TOKEN", "s3cret")
	code, out, errOut = cli(t, "logs", "--address", server.Address, "--log-dir", t.TempDir(), "ops-logs-token-1", "say")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "== attempt 1 stdout ("+url+"/logs/ops-logs-token-1/say/1/stdout"+runID+") ==\nhello\n"+
		"== attempt 1 stderr ("+url+"/logs/ops-logs-token-1/say/1/stderr"+runID+") ==\noops\n", out, "a log that does not end in a newline gets one")
}

func TestLogsFetchedFromTheWorkerThatRanTheAttempt(t *testing.T) {
	parallel(t)
	queue := "ops-logs"
	dirs := []string{t.TempDir(), t.TempDir()}
	urls := make([]string, 2)
	for i, d := range dirs {
		urls[i], _ = observedWorker(t, queue, d)
	}
	file := writePlaybook(t, t.TempDir(), "ops.yaml", fmt.Sprintf(retriedSlowStep, "0"))
	code, out, errOut := cli(t, "run", "--address", server.Address, "--task-queue", queue, "--id", "ops-logs-1", file)
	require.Equal(t, 0, code, out+errOut)

	// The worker that ran the last attempt, and the other one.
	ran := 0
	if _, err := os.Stat(filepath.Join(activities.RunLogDir(dirs[1], "ops-logs-1", ""), "work", "attempt-2.stdout")); err == nil {
		ran = 1
	}
	require.FileExists(t, filepath.Join(activities.RunLogDir(dirs[ran], "ops-logs-1", ""), "work", "attempt-2.stdout"))
	for _, dir := range []string{dirs[1-ran], t.TempDir()} {
		code, out, errOut = cli(t, "logs", "--address", server.Address, "--log-dir", dir, "ops-logs-1", "work")
		require.Equal(t, 0, code, errOut)
		// The latest run's, by its run ID, as the server knows it.
		require.Regexp(t, `== attempt 2 stdout \(`+regexp.QuoteMeta(urls[ran]+"/logs/ops-logs-1/work/2/stdout?run_id=")+`[0-9a-f-]{36}\) ==\nout-2\n`, out)
		require.Regexp(t, `== attempt 2 stderr \(`+regexp.QuoteMeta(urls[ran]+"/logs/ops-logs-1/work/2/stderr?run_id=")+`[0-9a-f-]{36}\) ==\nerr-2\n`, out)
	}
	code, out, errOut = cli(t, "logs", "--address", server.Address, "--log-dir", t.TempDir(), "--attempt", "1", "ops-logs-1", "work")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "out-1\n")
	require.Contains(t, out, "err-1\n")

	// The failed attempt's record says where it ran, and its failure carries
	// the ends of its stdout and stderr.
	var agg struct {
		Steps map[string]struct {
			AttemptErrors []struct {
				LogsAt string         `json:"logs_at"`
				Error  map[string]any `json:"error"`
			} `json:"attempt_errors"`
		} `json:"steps"`
	}
	code, out, _ = cli(t, "status", "--address", server.Address, "--json", "ops-logs-1")
	require.Equal(t, 0, code)
	require.NoError(t, json.Unmarshal([]byte(out), &agg), out)
	errs := agg.Steps["work"].AttemptErrors
	require.Len(t, errs, 1, out)
	require.Contains(t, urls, errs[0].LogsAt)
	details := errs[0].Error["details"].(map[string]any)
	require.Equal(t, "out-1\n", details["stdout"])
	require.Equal(t, "err-1\n", details["stderr"])
}

// `playbook logs RUN STEP` reads the latest run with that ID, as the
// server knows it: when that run ran the step on another worker, its logs
// come from there, not from an earlier run's that this machine logged.
func TestLogsReadTheLatestRunOfAnID(t *testing.T) {
	parallel(t)
	here, there := t.TempDir(), t.TempDir()
	queue := fmt.Sprintf("ops-latest-%d", time.Now().UnixNano())
	runWorker(t, []string{"--task-queue", queue + "-here", "--log-dir", here})
	observedWorker(t, queue+"-there", there)
	file := writePlaybook(t, t.TempDir(), "ops.yaml", `metadata: {name: ops}
workload: {tag: one}
workflow:
  - step: s
    tool: {kind: shell, command: 'echo "tag=$T"', env: {T: "{{ workload.tag }}"}}
`)
	id := "ops-latest-" + queue
	for _, r := range []struct{ queue, tag string }{{queue + "-here", "one"}, {queue + "-there", "two"}} {
		code, out, errOut := cli(t, "run", "--address", server.Address, "--task-queue", r.queue, "--id", id, "--set", "tag="+r.tag, file)
		require.Equal(t, 0, code, out+errOut)
	}
	code, out, errOut := cli(t, "logs", "--address", server.Address, "--log-dir", here, id, "s")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "tag=two\n", "the latest run's logs, from the worker that ran it")
	require.NotContains(t, out, "tag=one")

	code, _, errOut = cli(t, "logs", "--address", server.Address, "--log-dir", here, id+"-nosuch", "s")
	require.Equal(t, 1, code)
	require.Equal(t, "logs: the server knows no run "+id+"-nosuch (a mistyped ID? its retention may have removed it), and this log directory holds none of its logs\n", errOut)
}

// stepEvents lists a JSON log's step transitions of one run, as
// "event attempt", checking that every line is JSON and each transition's
// fields.
func stepEvents(t *testing.T, log, workflowID, step string) []string {
	t.Helper()
	var seen []string
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), "every log line is JSON: %s", sc.Text())
		if ev, _ := line["event"].(string); strings.HasPrefix(ev, "step_") && line["workflow_id"] == workflowID {
			require.Equal(t, step, line["step"], sc.Text())
			require.NotEmpty(t, line["run_id"], sc.Text())
			seen = append(seen, fmt.Sprintf("%s %v", ev, line["attempt"]))
		}
	}
	return seen
}

// A worker stopped past its drain timeout logs its running attempt lost.
func TestJSONLogSaysAnAttemptWasLost(t *testing.T) {
	parallel(t)
	queue := "ops-lost"
	_, stderr, cmd := startObservedWorker(t, queue, t.TempDir(), "--log-format", "json", "--log-level", "debug")
	file := writePlaybook(t, t.TempDir(), "ops.yaml", `metadata:
  name: ops
workflow:
  - step: work
    tool: { kind: shell, command: 'sleep 60' }
`)
	code, out, errOut := cli(t, "run", "--address", server.Address, "--task-queue", queue, "--id", "ops-lost-1", "--detach", file)
	require.Equal(t, 0, code, out+errOut)
	defer func() { _ = tc.TerminateWorkflow(context.Background(), "ops-lost-1", "", "test over") }()
	require.Eventually(t, func() bool { return len(stepEvents(t, stderr.String(), "ops-lost-1", "work")) > 0 },
		30*time.Second, 100*time.Millisecond, "the step starts")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), stderr.String())
	require.Equal(t, []string{"step_started 1", "step_lost 1"}, stepEvents(t, stderr.String(), "ops-lost-1", "work"))
	require.Regexp(t, `(?m)^\{.*"msg":"Stopping: no new steps; running steps have [^"]+ to finish \(signal again to stop at once\)\.","event":"worker_stopping"\}$`, stderr.String(),
		"the worker's word on stopping is a JSON line too")
}
