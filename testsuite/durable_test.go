package testsuite

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"playbook/activities"
	"playbook/internal/quietlog"
	"playbook/interpreter/contract"
	"playbook/interpreter/playbookwf"
	"playbook/interpreter/spec"
	"playbook/submit"
	"playbook/worker"
)

// waitForNoProcess fails unless no process's command line holds marker
// within the given time.
func waitForNoProcess(t *testing.T, marker string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for len(processesMatching(marker)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("processes of the killed worker's step are left: %v", processesMatching(marker))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// workerProcess starts a real `playbook worker` on the shared server.
func workerProcess(t *testing.T, queue string, extra ...string) (cmd *exec.Cmd, stderr *strings.Builder) {
	t.Helper()
	args := append([]string{"worker", "--address", server.Address, "--task-queue", queue, "--log-dir", t.TempDir()}, extra...)
	cmd = exec.Command(playbookBinary(t), args...)
	stderr = &strings.Builder{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, stderr
}

// waitExit waits for a stopping worker to exit 0.
func waitExit(t *testing.T, cmd *exec.Cmd, stderr *strings.Builder, within time.Duration) {
	t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		require.NoError(t, err, "a stopped worker exits 0; stderr:\n%s", stderr)
	case <-time.After(within):
		t.Fatalf("the worker did not exit within %s of SIGTERM", within)
	}
}

// startedSteps counts a run's activities that a worker is running.
func startedSteps(c client.Client, workflowID string) int {
	return len(runningSteps(c, workflowID))
}

// runningSteps names a run's steps whose activity a worker is running.
func runningSteps(c client.Client, workflowID string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d, err := c.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		return nil
	}
	var running []string
	for _, pa := range d.GetPendingActivities() {
		if pa.GetState() == enums.PENDING_ACTIVITY_STATE_STARTED {
			running = append(running, pa.GetActivityId())
		}
	}
	return running
}

// Acceptance: `playbook dev` SIGKILLed while five runs of a three-step
// shell playbook (no retry blocks) are in their second step, then started
// again on the same --db: every run completes; no step that had completed
// ran again and no process of the killed server's steps wrote anything
// (each step appends a mark when it ends: one mark per step per run); and
// `status` shows each lost attempt.
func TestDevKilledMidStepRunsComplete(t *testing.T) {
	parallel(t)
	bin := playbookBinary(t)
	dir := t.TempDir()
	db, marks, gate := filepath.Join(dir, "dev.db"), filepath.Join(dir, "marks"), filepath.Join(dir, "gate")
	port, uiPort := devPorts(t)
	// b waits for the gate, so every run is in the middle of b when the
	// server dies, and the retried b finishes once the test opens the gate.
	// Its heartbeat timeout is short, so that its lost attempts are given
	// up within seconds of the server's return, not the default's 30s.
	file := writePlaybook(t, t.TempDir(), "playbook.yaml", `metadata: {name: crash}
workload: {marks: "", gate: ""}
workflow:
  - step: a
    tool: {kind: shell, command: 'echo "$PLAYBOOK_RUN_ID a $PLAYBOOK_ATTEMPT" >> "$MARKS"', env: {MARKS: "{{ workload.marks }}"}}
    next: b
  - step: b
    heartbeat_timeout: 5s
    tool:
      kind: shell
      command: 'while [ ! -e "$GATE" ]; do sleep 0.1; done; echo "$PLAYBOOK_RUN_ID b $PLAYBOOK_ATTEMPT" >> "$MARKS"'
      env: {MARKS: "{{ workload.marks }}", GATE: "{{ workload.gate }}"}
    next: c
  - step: c
    tool: {kind: shell, command: 'echo "$PLAYBOOK_RUN_ID c $PLAYBOOK_ATTEMPT" >> "$MARKS"', env: {MARKS: "{{ workload.marks }}"}}
`)
	dev := launchDev(t, bin, db, &port, &uiPort)
	address := fmt.Sprintf("127.0.0.1:%d", port)
	t.Cleanup(func() {
		if dev.ProcessState == nil {
			_ = dev.Process.Kill()
			_ = dev.Wait()
		}
	})
	c, err := client.Dial(client.Options{HostPort: address, Logger: quietlog.New()})
	require.NoError(t, err)
	var ids []string
	for i := range 5 {
		id := fmt.Sprintf("crash-%d-%d", time.Now().UnixNano(), i)
		_ = startOn(t, c, file, id, contract.TaskQueue, map[string]any{"marks": marks, "gate": gate})
		ids = append(ids, id)
	}
	// Step a has written its mark and the server has its completion: the
	// one running activity is b's (a's mark alone could come just before
	// a's worker reported it, and a killed then would be lost, not done).
	waitFor(t, "every run to be in step b", func() bool {
		for _, id := range ids {
			if running := runningSteps(c, id); len(running) != 1 || running[0] != "b" || !strings.Contains(readFile(marks), id+" a ") {
				return false
			}
		}
		return true
	})
	c.Close()
	require.NoError(t, dev.Process.Signal(syscall.SIGKILL))
	_ = dev.Wait()

	restarting := time.Now()
	dev = launchDev(t, bin, db, &port, &uiPort)
	address = fmt.Sprintf("127.0.0.1:%d", port) // the same, unless it was taken meanwhile
	t.Logf("dev was back in %s", time.Since(restarting).Round(100*time.Millisecond))
	back := time.Now()
	defer func() {
		_ = dev.Process.Signal(syscall.SIGINT)
		_ = dev.Wait()
	}()
	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	c, err = client.Dial(client.Options{HostPort: address, Logger: quietlog.New()})
	require.NoError(t, err)
	defer c.Close()
	for _, id := range ids {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		var agg contract.Aggregate
		require.NoError(t, c.GetWorkflow(ctx, id, "").Get(ctx, &agg), "run %s", id)
		cancel()
		t.Logf("run %s completed %s after dev was back", id, time.Since(back).Round(100*time.Millisecond))
		require.Equal(t, "completed", agg.Status, id)
		require.Equal(t, 1, agg.Steps["a"].Attempts, "a completed before the crash and did not run again")
		b := agg.Steps["b"]
		require.Equal(t, 2, b.Attempts, "b's first attempt was lost with the server's worker, its second completed")
		require.Len(t, b.AttemptErrors, 1)
		require.True(t, b.AttemptErrors[0].Lost)
		require.Equal(t, "heartbeat_timeout", b.AttemptErrors[0].Error.Type)
		require.Equal(t, 1, agg.Steps["c"].Attempts)

		code, out, errOut := cli(t, "status", "--address", address, id)
		require.Equal(t, 0, code, errOut)
		require.Regexp(t, `(?m)^b\s+completed\s+2\s.*attempt 1 lost \(heartbeat_timeout\)$`, out)
	}
	var want []string
	for _, id := range ids {
		want = append(want, id+" a 1", id+" b 2", id+" c 1")
	}
	require.ElementsMatch(t, want, strings.Split(strings.TrimSpace(readFile(marks)), "\n"),
		"one mark per step: nothing that completed ran again, and no process of the killed server's steps was left to write")
}

// Acceptance: `on_lost: fail` keeps the behaviour from before lost attempts
// were retried: a lost attempt fails the step, with or without a retry
// block, and nothing runs it again.
func TestOnLostFailFailsTheStep(t *testing.T) {
	parallel(t)
	queue := fmt.Sprintf("on-lost-%d", time.Now().UnixNano())
	marker := fmt.Sprintf("playbook-on-lost-%d", time.Now().UnixNano())
	file := writePlaybook(t, t.TempDir(), "playbook.yaml", `metadata: {name: on-lost}
failure_mode: continue
workflow:
  - step: once
    on_lost: fail
    heartbeat_timeout: 2s
    tool: {kind: shell, command: "sleep 30 # `+marker+`"}
  - step: retried
    on_lost: fail
    heartbeat_timeout: 2s
    retry: {max_attempts: 3, initial_delay: 100ms}
    tool: {kind: shell, command: "sleep 30 # `+marker+`"}
`)
	first, _ := workerProcess(t, queue)
	run := start(t, file, queue, nil)
	waitFor(t, "both steps to run", func() bool { return startedSteps(tc, run.GetID()) == 2 })
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()
	waitForNoProcess(t, marker, 5*time.Second)
	workerProcess(t, queue)

	agg := finish(t, run)
	require.Equal(t, "failed", agg.Status)
	for _, name := range []string{"once", "retried"} {
		s := agg.Steps[name]
		require.Equal(t, contract.StatusFailed, s.Status, name)
		require.Equal(t, "heartbeat_timeout", s.Error.Type, name)
		require.Equal(t, 1, s.Attempts, "%s: the lost attempt was the only one", name)
		require.Len(t, s.AttemptErrors, 1, name)
		require.True(t, s.AttemptErrors[0].Lost, name)
	}
	require.Contains(t, agg.Steps["retried"].Error.Message, "a lost attempt fails this step", "the retry block did not retry it")
	// The corpus's run of the lost-attempts-retried change's new side.
	require.True(t, hasMarker(t, run.GetID(), "lost-attempts-retried"))
	replay(t, "change_lost_attempts_retried", run.GetID(), run.GetRunID())
}

// Acceptance: SIGTERM on a worker lets its running step finish within the
// drain timeout; the worker then exits cleanly.
func TestWorkerSIGTERMLetsTheStepFinish(t *testing.T) {
	parallel(t)
	queue := fmt.Sprintf("drain-finish-%d", time.Now().UnixNano())
	file := writePlaybook(t, t.TempDir(), "playbook.yaml", `metadata: {name: drain}
workflow:
  - step: slow
    tool: {kind: shell, command: "sleep 3; echo finished"}
`)
	first, stderr := workerProcess(t, queue, "--drain-timeout", "30s")
	run := start(t, file, queue, nil)
	waitFor(t, "the step to run", func() bool { return startedSteps(tc, run.GetID()) == 1 })
	require.NoError(t, first.Process.Signal(syscall.SIGTERM))
	workerProcess(t, queue) // for the rest of the run
	waitExit(t, first, stderr, 25*time.Second)
	require.Contains(t, stderr.String(), "Stopping: no new steps; running steps have 30s to finish")

	agg := finish(t, run)
	require.Equal(t, "completed", agg.Status)
	require.Equal(t, 1, agg.Steps["slow"].Attempts, "the step finished on the stopping worker")
	require.Empty(t, agg.Steps["slow"].AttemptErrors)
}

// Acceptance: SIGTERM on a worker whose step outlasts the drain timeout
// cancels the step (its processes are killed) and reports the attempt lost,
// so that another worker retries it at once: long before the step's
// heartbeat timeout (60s here) would have noticed.
func TestWorkerSIGTERMCancelsAfterTheDrainTimeout(t *testing.T) {
	parallel(t)
	queue := fmt.Sprintf("drain-cancel-%d", time.Now().UnixNano())
	marker := fmt.Sprintf("playbook-drain-cancel-%d", time.Now().UnixNano())
	file := writePlaybook(t, t.TempDir(), "playbook.yaml", `metadata: {name: drain}
workflow:
  - step: slow
    heartbeat_timeout: 60s
    tool: {kind: shell, command: 'if [ "$PLAYBOOK_ATTEMPT" = 1 ]; then echo halfway; echo slow >&2; sleep 60; fi # `+marker+`'}
`)
	first, stderr := workerProcess(t, queue, "--drain-timeout", "1s")
	run := start(t, file, queue, nil)
	waitFor(t, "the step to run", func() bool { return startedSteps(tc, run.GetID()) == 1 })
	stopped := time.Now()
	require.NoError(t, first.Process.Signal(syscall.SIGTERM))
	waitExit(t, first, stderr, 25*time.Second)
	require.Empty(t, processesMatching(marker), "the cancelled step's processes were killed")
	workerProcess(t, queue)

	agg := finish(t, run)
	require.Less(t, time.Since(stopped), 30*time.Second, "retried at once, not after the 60s heartbeat timeout")
	require.Equal(t, "completed", agg.Status)
	slow := agg.Steps["slow"]
	require.Equal(t, 2, slow.Attempts)
	require.Len(t, slow.AttemptErrors, 1)
	require.True(t, slow.AttemptErrors[0].Lost, "a stopped worker's attempt is lost, not the step's own failure")
	require.Equal(t, "worker_stopped", slow.AttemptErrors[0].Error.Type)
	require.Equal(t, map[string]any{"stdout": "halfway\n", "stderr": "slow\n"}, slow.AttemptErrors[0].Error.Details,
		"the end of the output survives the worker")
}

// A worker keeps each attempt's log files to --max-log-size, so that a
// step that prints without end does not fill the worker's disk: a long
// stream keeps its end, after a line saying how much was dropped.
func TestWorkerCapsEachAttemptsLog(t *testing.T) {
	parallel(t)
	queue := fmt.Sprintf("log-cap-%d", time.Now().UnixNano())
	file := writePlaybook(t, t.TempDir(), "playbook.yaml", `metadata: {name: log-cap}
workflow:
  - step: loud
    tool: {kind: shell, command: "seq 1 100000"}
    next: look
  - step: look
    tool: {kind: shell, command: 'f="$PLAYBOOK_LOG_DIR/../loud/attempt-1.stdout"; head -n 1 "$f"; tail -n 1 "$f"; wc -c < "$f"'}
`)
	workerProcess(t, queue, "--max-log-size", "4KiB")
	agg := finish(t, start(t, file, queue, nil))
	require.Equal(t, "completed", agg.Status)
	require.True(t, strings.HasSuffix(agg.Steps["loud"].Result.(map[string]any)["stdout"].(string), "99999\n100000\n"))
	look := strings.Split(strings.TrimSpace(agg.Steps["look"].Result.(map[string]any)["stdout"].(string)), "\n")
	require.Len(t, look, 3)
	require.Regexp(t, `^\[playbook: the first \d+ bytes of this output were dropped: its log keeps the last part, at most 4 KiB\]$`, look[0])
	require.Equal(t, "100000", look[1], "the log keeps the end of the stream")
	size, err := strconv.Atoi(strings.TrimSpace(look[2]))
	require.NoError(t, err)
	require.LessOrEqual(t, size, 4096+len(look[0])+1, "4 KiB of output, and the line before it")
}

// A worker that cannot parse a run's frozen playbook (a newer CLI submitted
// a key it does not know) fails the workflow task, not the run: the run
// stays open and completes once a worker that knows the key polls.
//
// The two workers are two builds of the same workflow type on one task
// queue. The older one is the real worker of this build, and the playbook
// carries a key this build's parser does not know (`from_the_future`). The
// newer one stands for a later build whose parser accepts that key; since
// no build knows it yet, it is this build's workflow behind a parser that
// drops the key first. What is under test is the older worker's real
// reaction, and that the run survives it.
func TestUnparseablePlaybookWaitsForANewerWorker(t *testing.T) {
	parallel(t)
	queue := fmt.Sprintf("rolling-%d", time.Now().UnixNano())
	src := "metadata: {name: rolling}\nworkflow:\n  - step: a\n    from_the_future: true\n    tool: {kind: noop, result: 42}\n"
	_, err := spec.Parse("rolling.yaml", []byte(src))
	require.ErrorContains(t, err, `unknown key "from_the_future"`, "this build cannot parse it")

	older := worker.New(tc, worker.Options{TaskQueue: queue, LogDir: logDir})
	require.NoError(t, older.Start())
	id := fmt.Sprintf("rolling-%d", time.Now().UnixNano())
	run, err := tc.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: queue},
		contract.WorkflowName, contract.Input{File: "rolling.yaml", Source: src})
	require.NoError(t, err)
	waitFor(t, "the older worker to fail a workflow task", func() bool {
		for _, e := range history(t, id, run.GetRunID()).Events {
			if e.GetEventType() == enums.EVENT_TYPE_WORKFLOW_TASK_FAILED {
				require.Contains(t, e.GetWorkflowTaskFailedEventAttributes().GetFailure().GetMessage(), "this worker cannot parse the run's playbook")
				return true
			}
		}
		return false
	})
	older.Stop()
	d, err := tc.DescribeWorkflowExecution(context.Background(), id, run.GetRunID())
	require.NoError(t, err)
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_RUNNING, d.GetWorkflowExecutionInfo().GetStatus(), "the run did not fail")

	newer := sdkworker.New(tc, queue, sdkworker.Options{})
	newer.RegisterWorkflowWithOptions(func(ctx workflow.Context, in contract.Input) (*contract.Aggregate, error) {
		in.Source = strings.ReplaceAll(in.Source, "    from_the_future: true\n", "")
		return playbookwf.Playbook(ctx, in)
	}, workflow.RegisterOptions{Name: contract.WorkflowName})
	acts := &activities.Activities{LogDir: logDir}
	newer.RegisterActivityWithOptions(acts.RunStep, activity.RegisterOptions{Name: contract.RunStepName})
	require.NoError(t, newer.Start())
	defer newer.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var agg contract.Aggregate
	require.NoError(t, run.Get(ctx, &agg))
	require.Equal(t, "completed", agg.Status)
	require.Equal(t, 42.0, agg.Steps["a"].Result)
}

// startOn submits a playbook through c without following it; an empty id
// names the run after the playbook.
func startOn(t *testing.T, c client.Client, file, id, queue string, workload map[string]any) client.WorkflowRun {
	t.Helper()
	b, err := submit.LoadBundle(file, os.ReadFile)
	require.NoError(t, err)
	in := contract.Input{File: file, BaseDir: filepath.Dir(b.RootPath), Source: b.Files[b.RootPath], Workload: workload, Files: b.Files}
	if id == "" {
		id = fmt.Sprintf("%s-%d", b.Root.Name, time.Now().UnixNano())
	}
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: queue}, contract.WorkflowName, in)
	require.NoError(t, err)
	return run
}

// readFile is a file's text, empty while it does not exist.
func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
