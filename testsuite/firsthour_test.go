package testsuite

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	sdkpb "go.temporal.io/api/sdk/v1"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
)

// Flags work after positional arguments as well as before, for every
// command; `--` ends the flags.
func TestFlagsAfterArguments(t *testing.T) {
	parallel(t)
	code, out, errOut := cli(t, "run", "../playbooks/branching.yaml", "--set", "rows=0", "--address", server.Address, "--json", "--id", "flags-after-1")
	require.Equal(t, 0, code, errOut)
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &agg))
	require.Equal(t, "flags-after-1", agg.WorkflowID)

	code, out, errOut = cli(t, "status", "flags-after-1", "--json", "--address", server.Address)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"failed_steps": []`)

	code, out, errOut = cli(t, "events", "flags-after-1", "--follow", "--address", server.Address)
	require.Equal(t, 0, code, errOut)
	require.True(t, strings.HasSuffix(strings.TrimSpace(out), "workflow_completed"), out)

	file := filepath.Join(t.TempDir(), "h.json")
	code, _, errOut = cli(t, "history", "flags-after-1", "-o", file, "--address", server.Address)
	require.Equal(t, 0, code, errOut)
	require.FileExists(t, file)

	code, out, errOut = cli(t, "graph", "../playbooks/branching.yaml", "--run", "flags-after-1", "--address", server.Address)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "flowchart")

	code, _, errOut = cli(t, "cancel", "flags-after-1", "--reason", "R", "--address", server.Address)
	require.Equal(t, 5, code, errOut)

	// After `--`, a dash starts a positional argument, not a flag.
	code, _, errOut = cli(t, "validate", "--", "-no-such.yaml")
	require.Equal(t, 2, code)
	require.Equal(t, "-no-such.yaml: cannot read: no such file or directory\n", errOut)
}

// --set keeps each value whole (no splitting on commas) and reads it as YAML.
func TestSetKeepsValuesWhole(t *testing.T) {
	parallel(t)
	file := filepath.Join(t.TempDir(), "echo.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`metadata: {name: echo}
workload: {who: nobody, files: []}
workflow:
  - step: show
    tool: {kind: noop, result: {who: "{{ workload.who }}", files: "{{ workload.files }}"}}
`), 0o644))
	code, out, errOut := cli(t, "run", file, "--address", server.Address, "--json", "--set", "who=Smith, John", "--set", "files=[x.csv, y.csv]")
	require.Equal(t, 0, code, errOut)
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &agg))
	require.Equal(t, map[string]any{"who": "Smith, John", "files": []any{"x.csv", "y.csv"}}, agg.Steps["show"].Result)
}

func TestVersion(t *testing.T) {
	parallel(t)
	// The real binary: a test binary's build information lists no modules.
	for _, arg := range []string{"--version", "version"} {
		out, err := exec.Command(playbookBinary(t), arg).CombinedOutput()
		require.NoError(t, err, string(out))
		require.Regexp(t, `^playbook .+\ncommit .+\nTemporal Go SDK v1\.\d+\.\d+\nTemporal server v1\.\d+\.\d+\nGo go1\.\d+.*\nworkflow changes \d+, newest [a-z-]+\n$`, out)
	}
}

// `run --id ID` while a run with that ID is open refuses, naming that run.
func TestRunRefusesAnOpenRunsID(t *testing.T) {
	parallel(t, carries("playbook-long-running"))
	other := start(t, "../playbooks/long_running.yaml", "playbook", nil)
	defer func() { _ = tc.TerminateWorkflow(context.Background(), other.GetID(), "", "test over") }()
	code, out, errOut := cli(t, "run", "--address", server.Address, "--id", other.GetID(), "../playbooks/hello.yaml")
	require.Equal(t, 2, code, out)
	require.Equal(t, fmt.Sprintf("run: a run with ID %s is still open (run %s): give another --id, or follow it with `playbook events %s --follow --address %s`\n", other.GetID(), other.GetRunID(), other.GetID(), server.Address), errOut)
}

// The first Ctrl-C on `run` detaches: a line says the run goes on and how
// to follow or cancel it, exit 130, and the run is still running.
func TestCtrlCDetaches(t *testing.T) {
	parallel(t, carries("playbook-long-running"))
	cmd := exec.Command(playbookBinary(t), "run", "--id", "detach-1", "../playbooks/long_running.yaml")
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+server.Address)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	defer func() { _ = tc.TerminateWorkflow(context.Background(), "detach-1", "", "test over") }()
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && !strings.Contains(sc.Text(), "left") {
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	var after []string
	for sc.Scan() {
		after = append(after, sc.Text())
	}
	err = cmd.Wait()
	require.Equal(t, 130, cmd.ProcessState.ExitCode(), "%v: %s", err, stderr.String())
	for _, l := range after {
		require.NotContains(t, l, "(run)", "the run goes on: nothing is said of its last events")
	}
	require.Contains(t, stderr.String(), "Detached from detach-1: the run continues. Follow it with `playbook events detach-1 --follow`, cancel it with `playbook cancel detach-1`.")
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_RUNNING, workflowStatus(t, "detach-1"))
}

// Each outcome has its exit code; an unreachable server is 4, with words
// for a host that does not resolve and for no server at all.
func TestExitCodes(t *testing.T) {
	// Serial: t.Setenv (envconfig) (see parallel).
	closed := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	code, _, errOut := cli(t, "status", "--address", closed, "some-run")
	require.Equal(t, 4, code, errOut)
	require.True(t, strings.HasPrefix(errOut, "status: cannot reach Temporal at "+closed), errOut)

	code, _, errOut = cli(t, "run", "--address", "nosuchhost.invalid:7233", "../playbooks/hello.yaml")
	require.Equal(t, 4, code, errOut)
	require.Equal(t, "run: cannot reach Temporal at nosuchhost.invalid:7233: host nosuchhost.invalid does not resolve\n", errOut)

	if !listening("127.0.0.1:7233") {
		t.Setenv("TEMPORAL_CONFIG_FILE", filepath.Join(t.TempDir(), "none.toml"))
		t.Setenv("TEMPORAL_ADDRESS", "")
		code, _, errOut = cli(t, "status", "hello-abcde")
		require.Equal(t, 4, code, errOut)
		require.Contains(t, errOut, "Runs on the embedded in-memory server that `playbook run` starts when no server is configured end with that command")
		require.Contains(t, errOut, "`playbook dev`")
	}

	code, _, _ = cli(t, "run", "--address", server.Address, "--no-such-flag", "../playbooks/hello.yaml")
	require.Equal(t, 2, code, "usage")
}

// cancel on a run that already ended says how it ended, exit 5.
func TestCancelAnEndedRun(t *testing.T) {
	parallel(t)
	r := runExample(t, "failure_cleanup.yaml")
	code, out, errOut := cli(t, "cancel", r.agg.WorkflowID, "--address", server.Address)
	require.Equal(t, 5, code, out)
	require.Equal(t, "cancel: "+r.agg.WorkflowID+" already ended: failed, 1 of 5 steps failed (transform); nothing to cancel\n", errOut)
}

const slowLoop = `metadata: {name: slow-loop}
workflow:
  - step: each
    loop: { in: "1..12", mode: parallel, max_in_flight: 2 }
    tool: { kind: shell, command: 'sleep 0.5; echo "$I"', env: { I: "{{ item }}" } }
`

// A loop shows its progress: run's follower, status and the Web UI's
// details count the elements done, failed and running of the total; logs
// on the loop step says how to name an element.
func TestLoopProgressIsShown(t *testing.T) {
	// Serial: t.Setenv (the log directory) (see parallel).
	file := filepath.Join(t.TempDir(), "slow_loop.yaml")
	require.NoError(t, os.WriteFile(file, []byte(slowLoop), 0o644))
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := cli(t, "run", "--address", server.Address, "--id", "loop-progress-1", file)
		done <- result{code, out, errOut}
	}()
	progress := regexp.MustCompile(`loop: (\d+) of 12 elements done, 0 failed, 2 running`)
	var status, details string
	waitFor(t, "status to show loop progress", func() bool {
		_, status, _ = cli(t, "status", "--address", server.Address, "loop-progress-1")
		return progress.MatchString(status)
	})
	v, err := tc.QueryWorkflow(context.Background(), "loop-progress-1", "", "__temporal_workflow_metadata")
	require.NoError(t, err)
	var meta sdkpb.WorkflowMetadata
	require.NoError(t, v.Get(&meta))
	details = meta.GetCurrentDetails()
	require.Regexp(t, `\| each \| running \| 0 \| loop: \d+ of 12 elements done, 0 failed, 2 running \|`, details)
	r := <-done
	require.Equal(t, 0, r.code, r.err)
	require.Regexp(t, `each\s+loop: \d+ of 12 elements done, 0 failed, 2 running`, r.out)

	t.Setenv("PLAYBOOK_LOG_DIR", logDir)
	code, _, errOut := cli(t, "logs", "loop-progress-1", "each")
	require.Equal(t, 2, code)
	require.Equal(t, "logs: each is a loop step: name one element by its index, as in `playbook logs loop-progress-1 'each[0]'` (12 elements logged here, index 0 to 11)\n", errOut)
	code, out, errOut := cli(t, "logs", "loop-progress-1", "each[11]")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "12\n")
	code, _, errOut = cli(t, "logs", "loop-progress-1", "each[12]")
	require.Equal(t, 1, code)
	require.Equal(t, "logs: no logs of each[12]: 12 elements of each logged here, index 0 to 11 (an element run on another worker is logged there; a worker started with --metrics-address serves them)\n", errOut)
}

// status --json is the aggregate in run --json's shape, live state beside it.
func TestStatusJSONHasRunsShape(t *testing.T) {
	parallel(t)
	r := runExample(t, "failure_cleanup.yaml")
	code, out, errOut := cli(t, "status", "--address", server.Address, r.agg.WorkflowID, "--json")
	require.Equal(t, 0, code, errOut)
	var st map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Equal(t, []any{"transform"}, st["failed_steps"])
	require.Equal(t, "failed", st["status"])
	require.Contains(t, st, "steps")
	require.NotContains(t, st, "aggregate")
}

// playbook dev keeps the server's and the SDK's own logs out of the
// terminal: a failing and a cancelled step print nothing there.
func TestDevKeepsItsLogsToItself(t *testing.T) {
	parallel(t, carries("playbook-loop-cancel"))
	bin := playbookBinary(t)
	port := freePort(t)
	cmd := exec.Command(bin, "dev", "--db", ":memory:", "--port", fmt.Sprint(port), "--ui-port", "0")
	cmd.Env = append(os.Environ(), "PLAYBOOK_LOG_DIR="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(out)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "Worker on task queue") {
	}
	go func() {
		for sc.Scan() {
		}
	}()
	address := fmt.Sprintf("127.0.0.1:%d", port)
	code, _, errOut := cli(t, "run", "--address", address, "../playbooks/loop_cancel.yaml")
	require.Equal(t, 1, code, errOut)
	code, _, errOut = cli(t, "run", "--address", address, "../playbooks/flaky.yaml")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.NoError(t, cmd.Wait())
	// dev's own word on stopping is the only line its stderr may hold.
	var foreign []string
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if line != "" && !strings.HasPrefix(line, "Stopping: no new steps;") {
			foreign = append(foreign, line)
		}
	}
	require.Empty(t, foreign, "nothing but what dev itself says")
}

// Small things that read as sloppiness: a long step name keeps the columns
// aligned, one step is "1 step", a retry with nothing to reuse says so, and
// the classify hint names the real run.
func TestCosmetics(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	long := filepath.Join(dir, "long.yaml")
	require.NoError(t, os.WriteFile(long, []byte(`metadata: {name: long-names}
workflow:
  - step: a_much_longer_step_name
    tool: {kind: noop}
    next: b
  - step: b
    tool: {kind: noop}
`), 0o644))
	code, out, errOut := cli(t, "run", "--address", server.Address, "--id", "long-names-1", long)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `\d\d:\d\d:\d\d  a_much_longer_step_name  started\n`, out)
	require.Regexp(t, `\d\d:\d\d:\d\d  b                        started\n`, out)
	// events keeps its columns too.
	code, out, errOut = cli(t, "events", "--address", server.Address, "long-names-1")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `step_completed       a_much_longer_step_name  attempt 1`, out)
	require.Regexp(t, `step_completed       b                        attempt 1`, out)

	one := filepath.Join(dir, "one.yaml")
	require.NoError(t, os.WriteFile(one, []byte("metadata: {name: one}\nworkflow:\n  - step: only\n    tool: {kind: shell, command: 'exit 1'}\n"), 0o644))
	code, out, _ = cli(t, "run", "--address", server.Address, "--id", "one-step-1", one)
	require.Equal(t, 1, code)
	require.Contains(t, out, "1 of 1 step failed; run failed")
	require.Contains(t, out, "Run one-step-1 failed: 1 of 1 step failed (only).")
	code, out, errOut = cli(t, "validate", one)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, one+": ok (one, 1 step)\n", out)

	code, out, errOut = cli(t, "retry", "--address", server.Address, "one-step-1", "--id", "one-step-2")
	require.Equal(t, 1, code)
	require.Contains(t, out, "Retrying one-step-1 as one-step-2; no completed step to reuse: every step runs.\n", errOut)
	require.NotContains(t, out, "reusing 0")
	// A retry's ID is not that of a run whose work it reuses: the run
	// retried, or one that run retried in turn.
	for _, id := range []string{"one-step-2", "one-step-1"} {
		code, out, errOut = cli(t, "retry", "--address", server.Address, "one-step-2", "--id", id)
		require.Equal(t, 2, code, out)
		require.Equal(t, "retry: --id "+id+" is the ID of a run whose work this retry reuses (the run retried, or one it retried in turn): its files are kept under that ID, and the new run would write its own over them; give the new run another ID\n", errOut)
	}

	done := make(chan string, 1)
	go func() {
		_, out, _ := cli(t, "run", "--address", server.Address, "--id", "classify-hint-1", "../playbooks/pending_failed.yaml")
		done <- out
	}()
	waitFor(t, "a pending_failed step", func() bool {
		_, out, _ := cli(t, "pending", "--address", server.Address, "classify-hint-1", "--json")
		return strings.Contains(out, `"step"`)
	})
	var pending []engine.PendingStep
	_, out, _ = cli(t, "pending", "--address", server.Address, "classify-hint-1", "--json")
	require.NoError(t, json.Unmarshal([]byte(out), &pending))
	for _, p := range pending {
		code, _, errOut = cli(t, "classify", "--address", server.Address, "classify-hint-1", p.Step, "fail")
		require.Equal(t, 0, code, errOut)
	}
	select {
	case out = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not end after its classification")
	}
	require.Contains(t, out, "waiting for `playbook classify classify-hint-1 ")
	require.NotContains(t, out, "classify RUN")
}
