package testsuite

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"playbook/internal/proctest"
	"playbook/interpreter/contract"
	"playbook/worker"
)

// Issue 28: what operating runs says matches what happened.

// A terminated run is terminated in status, in list and in list --status
// terminated, and list --status running leaves it out, though its
// PlaybookStatus search attribute still says running.
func TestTerminatedRunIsTerminatedEverywhere(t *testing.T) {
	parallel(t)
	file := writePlaybook(t, t.TempDir(), "ops28term.yaml", `metadata:
  name: ops28term
workflow:
  - step: wait
    tool: { kind: shell, command: 'sleep 60' }
`)
	code, out, errOut := cli(t, "run", "--address", server.Address, "--id", "ops28-term-1", "--detach", file)
	require.Equal(t, 0, code, out+errOut)
	waitRunning(t, "ops28-term-1", 1)
	listed := func(status string) []string {
		t.Helper()
		args := []string{"list", "--address", server.Address, "--playbook", "ops28term", "--json"}
		if status != "" {
			args = append(args, "--status", status)
		}
		code, out, errOut := cli(t, args...)
		require.Equal(t, 0, code, out+errOut)
		var runs []struct {
			WorkflowID string `json:"workflow_id"`
			Status     string `json:"status"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &runs), out)
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.WorkflowID+" "+r.Status)
		}
		return ids
	}
	require.Equal(t, []string{"ops28-term-1 running"}, listed("running"))

	code, out, errOut = cli(t, "terminate", "--address", server.Address, "ops28-term-1")
	require.Equal(t, 0, code, out+errOut)
	code, out, errOut = cli(t, "status", "--address", server.Address, "ops28-term-1")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "Run ops28-term-1 (playbook ops28term): terminated\n")
	code, out, errOut = cli(t, "status", "--address", server.Address, "--json", "ops28-term-1")
	require.Equal(t, 0, code, out+errOut)
	var st struct{ Status string }
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.Equal(t, "terminated", st.Status)

	waitFor(t, "visibility to see the termination", func() bool { return len(listed("running")) == 0 })
	require.Equal(t, []string{"ops28-term-1 terminated"}, listed(""))
	require.Equal(t, []string{"ops28-term-1 terminated"}, listed("terminated"))
	require.Empty(t, listed("completed"))
}

const retriedTwice = `metadata:
  name: ops28retry
workflow:
  - step: flaky
    tool: { kind: shell, command: 'if [ "$PLAYBOOK_ATTEMPT" -lt 3 ]; then echo "no $PLAYBOOK_ATTEMPT" >&2; exit 1; fi' }
    retry: { max_attempts: 5, initial_delay: %s, backoff_multiplier: 2, jitter: false }
`

// run counts attempts as the retry block does (of 5, not 5 plus the lost
// attempts' allowance), and says the delay the policy chose, not what was
// left of it when it looked.
func TestRunShowsConfiguredAttemptsAndDelay(t *testing.T) {
	parallel(t)
	file := writePlaybook(t, t.TempDir(), "ops28retry.yaml", fmt.Sprintf(retriedTwice, "1s"))
	code, out, errOut := cli(t, "run", "--address", server.Address, "--id", "ops28-retry-1", file)
	require.Equal(t, 0, code, out+errOut)
	require.Regexp(t, `flaky +retrying: attempt 1 failed: exited with code 1: no 1; attempt 2 of 5 after 1s \(at \d\d:\d\d:\d\d\.\d\)\n`, out)
	require.Regexp(t, `flaky +retrying: attempt 2 failed: exited with code 1: no 2; attempt 3 of 5 after 2s \(at \d\d:\d\d:\d\d\.\d\)\n`, out)
	require.NotContains(t, out, "of 8")
}

// status, between attempts, counts them the same way as run.
func TestStatusCountsConfiguredAttempts(t *testing.T) {
	parallel(t)
	file := writePlaybook(t, t.TempDir(), "ops28retry.yaml", fmt.Sprintf(retriedTwice, "20s"))
	code, out, errOut := cli(t, "run", "--address", server.Address, "--id", "ops28-retry-2", "--detach", file)
	require.Equal(t, 0, code, out+errOut)
	defer func() { _ = tc.TerminateWorkflow(context.Background(), "ops28-retry-2", "", "test over") }()
	waitFor(t, "the first retry to wait", func() bool {
		_, out, _ = cli(t, "status", "--address", server.Address, "ops28-retry-2")
		return strings.Contains(out, "retrying")
	})
	require.Contains(t, out, "retrying: attempt 2 of 5, next attempt at ")
}

// A retry an exit-code rule decided shows in run (even one over before a
// poll could see it), and logs prints its recovery script's output.
func TestRuleRetryIsShownAndItsRecoveryLogged(t *testing.T) {
	parallel(t)
	file := writePlaybook(t, t.TempDir(), "ops28rules.yaml", `metadata:
  name: ops28rules
failure_handlers:
  - name: remount
    rules:
      - exit_codes: [3]
        max_retries: 2
        recovery_script: 'echo "recovering from $PLAYBOOK_RETURN_CODE"; echo recovery-stderr >&2'
workflow:
  - step: flaky
    tool: { kind: shell, command: 'if [ "$PLAYBOOK_ATTEMPT" -lt 2 ]; then exit 3; fi' }
    failure_handler: remount
`)
	code, out, errOut := cli(t, "run", "--address", server.Address, "--id", "ops28-rules-1", file)
	require.Equal(t, 0, code, out+errOut)
	require.Regexp(t, `flaky +retr(y|i)(ing|ed): attempt 1 failed: exited with code 3; `, out)
	require.Regexp(t, `flaky +completed on attempt 2\n`, out)

	code, out, errOut = cli(t, "logs", "--address", server.Address, "--log-dir", logDir, "ops28-rules-1", "flaky", "--attempt", "1")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "== attempt 1 recovery script stdout (")
	require.Contains(t, out, "recovering from 3\n")
	require.Contains(t, out, "recovery-stderr\n")
}

// logs says why a step has no logs when it cannot have any: an http or
// noop step runs no process, a sub-playbook step's logs are its child
// run's, and a misspelt step is not in the run.
func TestLogsSaysWhyAStepHasNone(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	writePlaybook(t, dir, "child.yaml", `metadata:
  name: ops28child
workflow:
  - step: inner
    tool: { kind: shell, command: 'echo inner' }
`)
	file := writePlaybook(t, dir, "ops28kinds.yaml", `metadata:
  name: ops28kinds
workflow:
  - step: constant
    tool: { kind: noop, result: 1 }
  - step: sub
    tool: { kind: playbook, path: ./child.yaml }
`)
	code, out, errOut := cli(t, "run", "--address", server.Address, "--id", "ops28-kinds-1", file)
	require.Equal(t, 0, code, out+errOut)
	logs := func(step string) (int, string) {
		code, out, errOut := cli(t, "logs", "--address", server.Address, "--log-dir", logDir, "ops28-kinds-1", step)
		require.Empty(t, out)
		return code, errOut
	}
	code, errOut = logs("constant")
	require.Equal(t, 1, code)
	require.Equal(t, "logs: step constant (kind noop) runs no process, so it has no logs; its result or error is in `playbook status ops28-kinds-1 --json`\n", errOut)
	code, errOut = logs("sub")
	require.Equal(t, 1, code)
	require.Equal(t, "logs: step sub runs a sub-playbook: its steps ran in the child run ops28-kinds-1.sub, and their logs are there: `playbook logs ops28-kinds-1.sub STEP` (`playbook status ops28-kinds-1.sub` lists its steps)\n", errOut)
	code, errOut = logs("constnat")
	require.Equal(t, 2, code)
	require.Equal(t, "logs: run ops28-kinds-1 (playbook ops28kinds) has no step \"constnat\"; its steps: constant, sub, end\n", errOut)
	code, out, errOut = cli(t, "logs", "--address", server.Address, "--log-dir", logDir, "ops28-kinds-1.sub", "inner")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "inner\n")
}

// status lists the steps in the playbook's file order, not the order
// they started in.
func TestStatusFollowsFileOrder(t *testing.T) {
	parallel(t)
	file := writePlaybook(t, t.TempDir(), "ops28order.yaml", `metadata:
  name: ops28order
workflow:
  - step: zeta
    depends_on: [alpha]
    tool: { kind: shell, command: 'true' }
  - step: mid
    depends_on: [zeta]
  - step: alpha
    tool: { kind: shell, command: 'true' }
`)
	code, out, errOut := cli(t, "run", "--address", server.Address, "--id", "ops28-order-1", file)
	require.Equal(t, 0, code, out+errOut)
	code, out, errOut = cli(t, "status", "--address", server.Address, "ops28-order-1")
	require.Equal(t, 0, code, out+errOut)
	var rows []string
	_, table, found := strings.Cut(out, "\nSTEP ")
	require.True(t, found, out)
	for _, line := range strings.Split(table, "\n")[1:] {
		if f := strings.Fields(line); len(f) > 0 {
			rows = append(rows, f[0])
		}
	}
	require.Equal(t, []string{"zeta", "mid", "alpha", "end"}, rows, out)
}

// status of a finished run reads its history: no worker need poll its
// task queue.
func TestStatusOfFinishedRunNeedsNoWorker(t *testing.T) {
	// Serial: bounds a wall time to 5s (see parallel).
	queue := "ops28-noworker"
	w := worker.New(tc, worker.Options{TaskQueue: queue, LogDir: t.TempDir()})
	require.NoError(t, w.Start())
	agg := finish(t, startOn(t, tc, "../playbooks/failure_cleanup.yaml", "ops28-noworker-1", queue, nil))
	require.Equal(t, contract.RunFailed, agg.Status)
	w.Stop()

	began := time.Now()
	code, out, errOut := cli(t, "status", "--address", server.Address, "--task-queue", queue, "--json", "ops28-noworker-1")
	require.Equal(t, 0, code, out+errOut)
	require.Less(t, time.Since(began), 5*time.Second, "no query waits for a worker")
	var st contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.Equal(t, contract.RunFailed, st.Status)
	require.Equal(t, agg.FailedSteps, st.FailedSteps)
	require.Equal(t, contract.StatusFailed, st.Steps["transform"].Status)
}

// cancel_run on a run that has ended says what cancel says.
func TestMCPCancelOfEndedRunSaysAsTheCLI(t *testing.T) {
	parallel(t)
	code, out, errOut := cli(t, "run", "--address", server.Address, "--id", "ops28-ended-1", "../playbooks/hello.yaml")
	require.Equal(t, 0, code, out+errOut)
	code, _, errOut = cli(t, "cancel", "--address", server.Address, "ops28-ended-1")
	require.Equal(t, 5, code, errOut)
	cliSays := strings.TrimSuffix(strings.TrimPrefix(errOut, "cancel: "), "\n")
	require.Equal(t, "ops28-ended-1 already ended: completed, 0 of 3 steps failed; nothing to cancel", cliSays)

	text, isErr := callTool(t, mcpSession(t, "--allow-write"), "cancel_run", map[string]any{"run": "ops28-ended-1", "reason": "r"})
	require.True(t, isErr, text)
	require.Equal(t, cliSays, text)
}

// history without -o prints the history on stdout.
func TestHistoryPrintsToStdout(t *testing.T) {
	parallel(t)
	code, out, errOut := cli(t, "run", "--address", server.Address, "--id", "ops28-history-1", "../playbooks/hello.yaml")
	require.Equal(t, 0, code, out+errOut)
	code, out, errOut = cli(t, "history", "--address", server.Address, "ops28-history-1")
	require.Equal(t, 0, code, errOut)
	var h struct{ Events []json.RawMessage }
	require.NoError(t, json.Unmarshal([]byte(out), &h), out)
	require.NotEmpty(t, h.Events)
}

// dev on a port in use says so in one line (exit 2); a run submitted as
// soon as dev says its worker is up is not told that no worker polls.
func TestDevBusyPortAndReadyWorker(t *testing.T) {
	parallel(t)
	bin := playbookBinary(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	out, err := exec.Command(bin, "dev", "--db", ":memory:", "--port", fmt.Sprint(port), "--ui-port", "0").CombinedOutput()
	require.Error(t, err)
	require.Equal(t, 2, err.(*exec.ExitError).ExitCode(), string(out))
	require.Equal(t, fmt.Sprintf("dev: --port: 127.0.0.1:%d is in use (another playbook dev or Temporal server?): stop it, or give another --port\n", port), string(out))

	devPort, uiPort := devPorts(t)
	stop := startDev(t, bin, filepath.Join(t.TempDir(), "dev.db"), &devPort, &uiPort)
	defer stop()
	code, out2, errOut := cli(t, "run", "--address", fmt.Sprintf("127.0.0.1:%d", devPort), "--id", "ops28-dev-1", "../playbooks/hello.yaml")
	require.Equal(t, 0, code, out2+errOut)
	require.NotContains(t, errOut, "No worker is polling")
}

// embeddedRun starts `playbook run FILE` on the embedded server (none
// configured) and gives the lines of its stdout and stderr, and a way to
// wait for one matching a pattern.
func embeddedRun(t *testing.T, file string) (cmd *exec.Cmd, await func(re string, within time.Duration) string) {
	t.Helper()
	if listening("127.0.0.1:7233") {
		t.Skip("a Temporal server listens on 127.0.0.1:7233; run would use it")
	}
	cmd = exec.Command(playbookBinary(t), "run", file)
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS=", "TEMPORAL_CONFIG_FILE="+filepath.Join(t.TempDir(), "none.toml"), "PLAYBOOK_LOG_DIR="+t.TempDir())
	output, w, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = w, w
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	w.Close()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(output)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return cmd, func(re string, within time.Duration) string {
		t.Helper()
		deadline := time.After(within)
		var seen []string
		for {
			select {
			case l, ok := <-lines:
				require.True(t, ok, "output ended before %q; it printed:\n%s", re, strings.Join(seen, "\n"))
				seen = append(seen, l)
				if regexp.MustCompile(re).MatchString(l) {
					return l
				}
			case <-deadline:
				_ = cmd.Process.Kill()
				t.Fatalf("no line matching %q within %s; it printed meanwhile:\n%s", re, within, strings.Join(seen, "\n"))
			}
		}
	}
}

// exitOf waits for cmd to exit within a bound and gives its exit code.
func exitOf(t *testing.T, cmd *exec.Cmd, within time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if err == nil {
			return 0
		}
		require.ErrorAs(t, err, &exit)
		return exit.ExitCode()
	case <-time.After(within):
		_ = cmd.Process.Kill()
		t.Fatalf("run did not exit within %s", within)
	}
	return -1
}

// Ctrl-C on run with the embedded server cancels the run as `cancel` does:
// the running step is cancelled, the always: true cleanup step runs, end
// decides (cancelled, exit 3), and a line says so at once.
func TestCtrlCOnEmbeddedRunRunsCleanups(t *testing.T) {
	parallel(t, alone("127.0.0.1:7233"))
	dir := t.TempDir()
	lock := filepath.Join(dir, "lock")
	require.NoError(t, os.Mkdir(lock, 0o755))
	file := writePlaybook(t, dir, "ops38ctrlc.yaml", fmt.Sprintf(`metadata:
  name: ops38ctrlc
workflow:
  - step: work
    tool: { kind: shell, command: 'sleep 120' }
    next: unlock
  - step: unlock
    always: true
    tool: { kind: shell, command: 'rmdir %s' }
`, lock))
	cmd, await := embeddedRun(t, file)
	await(`^Started ops38ctrlc-`, 60*time.Second)
	await(`\bwork\s+started`, 10*time.Second)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	await(`^Cancelling ops38ctrlc-\w+, as .playbook cancel. does: running steps are cancelled, its cleanup steps run, then end decides\. .*Ctrl-C again to stop at once`, 2*time.Second)
	await(`^unlock\s+completed\s+1`, 20*time.Second)
	await(`^Run ops38ctrlc-\w+ cancelled`, 5*time.Second)
	require.Equal(t, 3, exitOf(t, cmd, 10*time.Second))
	require.NoDirExists(t, lock, "the always: true step ran")
}

// A second Ctrl-C while the cancelled run winds down stops at once.
func TestSecondCtrlCOnEmbeddedRunStopsAtOnce(t *testing.T) {
	parallel(t, alone("127.0.0.1:7233"))
	dir := t.TempDir()
	file := writePlaybook(t, dir, "ops28long.yaml", `metadata:
  name: ops28long
workflow:
  - step: work
    tool: { kind: shell, command: 'sleep 120' }
  - step: cleanup
    always: true
    depends_on: [work]
    tool: { kind: shell, command: 'sleep 120' }
`)
	cmd, await := embeddedRun(t, file)
	await(`^Started ops28long-`, 60*time.Second)
	await(`\bwork\s+started`, 10*time.Second)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	await(`^Cancelling ops28long-\w+`, 2*time.Second)
	await(`\bcleanup\s+started`, 20*time.Second)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	await(`^Stopped ops28long-\w+ at once`, 2*time.Second)
	require.Equal(t, 130, exitOf(t, cmd, 5*time.Second))
}

// A worker logs an attempt that starts or completes only at debug level:
// at its default level (info) a run that goes well adds no line per
// attempt, and one that is retried says so. --log-level takes debug, info,
// warn or error.
func TestWorkerLogsAttemptsAtDebug(t *testing.T) {
	parallel(t)
	queue := "ops28-loglevel"
	_, stderr := observedWorker(t, queue, t.TempDir(), "--log-format", "json")
	file := writePlaybook(t, t.TempDir(), "ops28retry.yaml", fmt.Sprintf(retriedTwice, "10ms"))
	code, out, errOut := cli(t, "run", "--address", server.Address, "--task-queue", queue, "--id", "ops28-loglevel-1", file)
	require.Equal(t, 0, code, out+errOut)
	require.Equal(t, []string{"step_retried 1", "step_retried 2"}, stepEvents(t, stderr.String(), "ops28-loglevel-1", "flaky"))

	code, out, errOut = cli(t, "worker", "--address", server.Address, "--log-level", "loud")
	require.Equal(t, 2, code, out)
	require.Equal(t, "worker: --log-level \"loud\": give debug, info, warn or error\n", errOut)
}

// A worker whose log disk is full fails a shell step's attempts as
// tool_errors naming the log directory, counted as lost attempts (retried
// while lost_attempts allows), never as the step's own exit code.
func TestFullLogDiskFailsAsTheWorkers(t *testing.T) {
	parallel(t)
	dir := proctest.FullDisk(t)

	queue := "ops28-fulldisk"
	w := worker.New(tc, worker.Options{TaskQueue: queue, LogDir: dir})
	require.NoError(t, w.Start())
	defer w.Stop()
	file := writePlaybook(t, t.TempDir(), "ops28full.yaml", `metadata:
  name: ops28full
workflow:
  - step: write
    tool: { kind: shell, command: 'echo output; exit 1' }
    retry: { max_attempts: 3, initial_delay: 10ms }
    lost_attempts: 1
`)
	agg := finish(t, startOn(t, tc, file, "ops28-fulldisk-1", queue, nil))
	st := agg.Steps["write"]
	require.Equal(t, contract.StatusFailed, st.Status)
	require.Equal(t, contract.ErrTool, st.Error.Type)
	require.Contains(t, st.Error.Message, "the worker's log directory "+dir+" is full (no space left on device)")
	require.Contains(t, st.Error.Message, "(2 attempts lost: lost_attempts allows 1)")
	for _, a := range st.AttemptErrors {
		require.True(t, a.Lost, "attempt %d counts as lost, not as the step's failure", a.Attempt)
	}
}

// A run that reuses an ended run's ID keeps its own attempt logs: logs
// shows the latest run's, --run-id an earlier one's.
func TestReusedIDKeepsEachRunsLogs(t *testing.T) {
	parallel(t)
	file := writePlaybook(t, t.TempDir(), "ops28reuse.yaml", `metadata:
  name: ops28reuse
workload:
  word: none
workflow:
  - step: say
    tool: { kind: shell, command: 'echo "$WORD"', env: { WORD: "{{ workload.word }}" } }
`)
	var runIDs []string
	for _, word := range []string{"first", "second"} {
		code, out, errOut := cli(t, "run", "--address", server.Address, "--id", "ops28-reuse-1", "--set", "word="+word, "--json", file)
		require.Equal(t, 0, code, out+errOut)
		var agg contract.Aggregate
		require.NoError(t, json.Unmarshal([]byte(out), &agg))
		runIDs = append(runIDs, agg.RunID)
	}
	code, out, errOut := cli(t, "logs", "--address", server.Address, "--log-dir", logDir, "ops28-reuse-1", "say")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "== attempt 1 stdout ("+filepath.Join(logDir, "ops28-reuse-1", runIDs[1], "say", "attempt-1.stdout")+") ==\nsecond\n")
	code, out, errOut = cli(t, "logs", "--address", server.Address, "--log-dir", logDir, "--run-id", runIDs[0], "ops28-reuse-1", "say")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "\nfirst\n")
}

// A failure an exit-code rule matches is the rule's alone: run and status
// count its attempts by the rule (max_retries plus one), not by the
// retry block's larger max_attempts; and each retry is told once, the
// quick first one too.
func TestARulesRetryCountsTheRulesAttempts(t *testing.T) {
	parallel(t)
	file := writePlaybook(t, t.TempDir(), "rulecount.yaml", `metadata: {name: rulecount}
failure_handlers:
  - name: busy
    rules:
      - exit_codes: [75]
        max_retries: 2
workflow:
  - step: db
    retry: {max_attempts: 5, initial_delay: 100ms}
    failure_handler: busy
    tool: {kind: shell, command: 'sleep 0.5; exit 75'}
`)
	id := fmt.Sprintf("rulecount-%d", time.Now().UnixNano())
	code, out, errOut := cli(t, "run", "--address", server.Address, "--id", id, file)
	require.Equal(t, 1, code, out+errOut)
	require.NotContains(t, out, "of 5")
	for _, attempt := range []int{1, 2} {
		// Told live (retrying ... of 3), or, when no poll saw it, as the
		// run's event (retried ... followed): once.
		told := regexp.MustCompile(fmt.Sprintf(`db +(retrying: attempt %d failed: exited with code 75; attempt %d of 3|retried: attempt %d failed: exited with code 75; attempt %d followed)`, attempt, attempt+1, attempt, attempt+1))
		require.Len(t, told.FindAllString(out, -1), 1, "attempt %d's retry, told once:\n%s", attempt, out)
	}
	require.Contains(t, out, "busy gave up after 2 retries")
}
