package testsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"playbook/cmd/playbook/commands"
	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
	"playbook/interpreter/spec/expr"
	"playbook/worker"
)

// endsWithin runs a playbook written for the test with `run --json` and
// fails the test, instead of waiting for ever, when `run` has not returned
// within limit: the run it follows hangs. It replays the run's history.
func endsWithin(t *testing.T, limit time.Duration, source string, extra ...string) *contract.Aggregate {
	t.Helper()
	file := filepath.Join(t.TempDir(), "playbook.yaml")
	require.NoError(t, os.WriteFile(file, []byte(source), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var out, errOut bytes.Buffer
	args := append([]string{"playbook", "run", "--address", server.Address, "--json"}, extra...)
	code := commands.Main(ctx, append(args, file), &out, &errOut)
	require.NoError(t, ctx.Err(), "playbook run had not returned after %s; stderr:\n%s", limit, errOut.String())
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal(out.Bytes(), &agg), "stdout is exactly the aggregate; stderr:\n%s", errOut.String())
	require.Equal(t, exitCodeFor(agg.Status), code, errOut.String())
	replay(t, "", agg.WorkflowID, agg.RunID)
	return &agg
}

// ownQueueWorker starts a worker of the test's own on task queue queue, and
// returns queue: a run of thousands of steps fills it rather than the
// shared worker's slots, which every other test's steps need.
func ownQueueWorker(t *testing.T, queue string) string {
	t.Helper()
	w := worker.New(tc, worker.Options{TaskQueue: queue, LogDir: t.TempDir()})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return queue
}

// requireStub checks that a result in the aggregate is a stub for a value
// over its budget, and returns the size it says.
func requireStub(t *testing.T, v any) int {
	t.Helper()
	n, ok := expr.TruncatedSize(v)
	require.True(t, ok, "a stub: %.200v", v)
	require.NotEmpty(t, v.(map[string]any)["full_in"])
	return n
}

// 300 parallel elements printing 5 KB to stdout and 5 KB to stderr add up
// to a 2.5 MB loop result: the run completes, the aggregate carries a stub
// for it, and the steps after it read the whole result.
func TestBigLoopResultDoesNotHangTheRun(t *testing.T) {
	parallel(t, alone("cpu"))
	queue := ownQueueWorker(t, "hang-big-loop")
	agg := endsWithin(t, 2*time.Minute, `metadata: {name: big-loop}
workflow:
  - step: each
    loop: { in: "1..300", mode: parallel, max_in_flight: 50 }
    tool: { kind: shell, command: "head -c 5000 /dev/zero | tr '\\0' o; head -c 5000 /dev/zero | tr '\\0' e >&2" }
    next: count
  - step: count
    tool: { kind: noop, result: "{{ len(steps.each.result) }}:{{ len(steps.each.result[299].stdout) }}" }
`, "--task-queue", queue)
	require.Equal(t, "completed", agg.Status)
	require.Greater(t, requireStub(t, agg.Steps["each"].Result), 2_000_000)
	require.Equal(t, "300:4096", agg.Steps["count"].Result, "the run's own state keeps the whole result (a tail of 4 KiB)")
}

// Three python steps returning 900 KB each: the aggregate would be 2.7 MB;
// the two largest results are stubs and the run completes.
func TestBigResultsDoNotHangTheRun(t *testing.T) {
	parallel(t, alone("cpu"))
	queue := ownQueueWorker(t, "hang-big-results")
	agg := endsWithin(t, 2*time.Minute, `metadata: {name: big-results}
workflow:
  - { step: a, tool: { kind: python, code: "def main(): return 'a' * 900000" } }
  - { step: b, tool: { kind: python, code: "def main(): return 'b' * 900000" } }
  - { step: c, tool: { kind: python, code: "def main(): return 'c' * 900001" } }
`, "--task-queue", queue)
	require.Equal(t, "completed", agg.Status)
	require.Equal(t, 900003, requireStub(t, agg.Steps["c"].Result))
	require.Equal(t, 900002, requireStub(t, agg.Steps["a"].Result))
	require.Equal(t, strings.Repeat("b", 900000), agg.Steps["b"].Result)
}

func noopChain(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "metadata: {name: noop-chain}\nworkflow:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {step: s%d, tool: {kind: noop, result: %d}, next: s%d}\n", i, i, i+1)
	}
	fmt.Fprintf(&b, "  - {step: s%d, tool: {kind: noop, result: \"{{ steps.s%d.result }}\"}}\n", n, n-1)
	return b.String()
}

// A chain of 2,000 shell steps completes: each waits for the one before,
// and nothing the workflow does per step grows with the chain.
func TestLongShellChainCompletes(t *testing.T) {
	parallel(t, alone("cpu"))
	queue := ownQueueWorker(t, "hang-shell-chain")
	var b strings.Builder
	fmt.Fprintf(&b, "metadata: {name: shell-chain}\nworkflow:\n")
	for i := range 2000 {
		fmt.Fprintf(&b, "  - {step: s%d, tool: {kind: shell, command: \"true\"}, next: s%d}\n", i, i+1)
	}
	fmt.Fprintf(&b, "  - {step: s2000, tool: {kind: shell, command: \"echo $X\", env: {X: \"{{ steps.s1999.result.exit_code }}\"}}}\n")
	agg := endsWithin(t, 5*time.Minute, b.String(), "--task-queue", queue)
	require.Equal(t, "completed", agg.Status)
	require.Equal(t, 2001, agg.TotalSteps)
	require.Equal(t, 0.0, agg.Steps["s2000"].Result.(map[string]any)["json"])
}

// A chain of 5,000 noop steps is decided in the workflow without the SDK's
// deadlock detector failing its task (1,500 did before).
func TestLongNoopChainCompletes(t *testing.T) {
	parallel(t, alone("cpu"))
	queue := ownQueueWorker(t, "hang-noop-chain")
	agg := endsWithin(t, 2*time.Minute, noopChain(5000), "--task-queue", queue)
	require.Equal(t, "completed", agg.Status)
	require.Equal(t, 5000, agg.TotalSteps-1)
	require.Equal(t, 4999.0, agg.Steps["s5000"].Result)
	require.True(t, hasMarker(t, agg.WorkflowID, "pace-yields"), "the run yields to the deadlock detector")

	// Its events come in pages (contract.EventsPage) and all of them.
	code, out, errOut := cli(t, "events", "--address", server.Address, "--json", agg.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, 5001, strings.Count(out, `"type":"step_completed"`))
	// A client from before pages (no limit) still gets every event: two
	// for each step, and the run's own.
	for _, c := range []struct {
		args []any
		want int
	}{{[]any{0}, 10006}, {[]any{0, contract.EventsPage}, contract.EventsPage}} {
		v, err := tc.QueryWorkflow(context.Background(), agg.WorkflowID, agg.RunID, contract.QueryEvents, c.args...)
		require.NoError(t, err)
		var evs []engine.Event
		require.NoError(t, v.Get(&evs))
		require.Len(t, evs, c.want, "events for %v", c.args)
	}
}

// A value a template computes that JSON cannot carry fails its step with a
// clear error, and the run ends: before, the workflow task could not encode
// the activity's input and failed on every attempt.
func TestUnencodableInputFailsTheStep(t *testing.T) {
	parallel(t)
	agg := endsWithin(t, 2*time.Minute, `metadata: {name: nan-input}
workflow:
  - step: post
    tool: { kind: http, method: POST, url: "http://127.0.0.1:9/", body: "{{ 0.0 / 0 }}" }
  - step: copy
    tool: { kind: noop, result: "{{ 0.0 / 0 }}" }
  - step: each
    loop: { in: "[1, 0, 2]" }
    tool: { kind: http, method: POST, url: "http://127.0.0.1:9/", body: "{{ 1.0 / item }}" }
`)
	require.Equal(t, "failed", agg.Status)
	require.Equal(t, &contract.StepError{Type: contract.ErrTemplate, Message: "the input of step post cannot be encoded as JSON: json: unsupported value: NaN"}, agg.Steps["post"].Error)
	require.Equal(t, &contract.StepError{Type: contract.ErrTemplate, Message: "the input of each[1] cannot be encoded as JSON: json: unsupported value: +Inf"}, agg.Steps["each"].Error)
	require.Equal(t, contract.ErrTool, agg.Steps["copy"].Error.Type)
	require.Contains(t, agg.Steps["copy"].Error.Message, "unsupported value: NaN")
}

// A rendered input over the budget of one payload fails its step, naming
// the size and the budget; the run ends.
func TestInputOverBudgetFailsTheStep(t *testing.T) {
	parallel(t, alone("cpu"))
	agg := endsWithin(t, 2*time.Minute, `metadata: {name: big-input}
workflow:
  - step: make
    tool: { kind: python, code: "def main(): return 'x' * 750000" }
    next: use
  - step: use
    tool: { kind: shell, command: "true", env: { A: "{{ steps.make.result }}", B: "{{ steps.make.result }}" } }
`)
	require.Equal(t, "failed", agg.Status)
	require.Equal(t, contract.ErrInputTooLarge, agg.Steps["use"].Error.Type)
	require.Contains(t, agg.Steps["use"].Error.Message, "the input of step use is 1.4 MiB, over the budget of 1 MiB")
}

// A step's retry_when travels with each attempt, and with it only what it
// reads: the activity input of `check` holds steps.count, not the result
// of `dump`, however large.
func TestRetryScopeCarriesOnlyWhatItReads(t *testing.T) {
	parallel(t)
	agg := endsWithin(t, 2*time.Minute, `metadata: {name: scope-pruned}
workload: {limit: 3, unread: "workload-not-read"}
workflow:
  - { step: count, tool: { kind: noop, result: { rows: 5 } }, next: check }
  - { step: dump, tool: { kind: noop, result: "dump-result-not-read" }, next: check }
  - step: check
    tool: { kind: shell, command: "true" }
    retry: { max_attempts: 2, retry_when: "steps.count.result.rows < workload.limit" }
`)
	require.Equal(t, "completed", agg.Status)
	var input string
	for _, e := range history(t, agg.WorkflowID, agg.RunID).GetEvents() {
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityId() == "check" {
			input = string(a.GetInput().GetPayloads()[0].GetData())
		}
	}
	var in contract.StepInput
	require.NoError(t, json.Unmarshal([]byte(input), &in), input)
	require.Equal(t, map[string]any{"limit": 3.0}, in.Scope["workload"])
	require.Equal(t, []string{"count"}, keysOf(in.Scope["steps"]))
	require.NotContains(t, input, "dump-result-not-read")
	require.NotContains(t, input, "workload-not-read")
}

func keysOf(m any) []string {
	var keys []string
	for k := range m.(map[string]any) {
		keys = append(keys, k)
	}
	return keys
}

// When a run's workflow task fails again and again (here a worker whose
// Playbook workflow always panics), `playbook run` says that the run is
// not progressing and why, instead of following it silently.
func TestRunSaysWhenARunIsNotProgressing(t *testing.T) {
	parallel(t)
	const queue = "stuck"
	w := sdkworker.New(tc, queue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(func(workflow.Context, contract.Input) error { panic("this worker cannot run playbooks") }, workflow.RegisterOptions{Name: contract.WorkflowName})
	require.NoError(t, w.Start())
	defer w.Stop()
	file := filepath.Join(t.TempDir(), "stuck.yaml")
	require.NoError(t, os.WriteFile(file, []byte("metadata: {name: stuck}\nworkflow:\n  - {step: a}\n"), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var out, errOut lockedBuffer
	go func() {
		for ctx.Err() == nil && !strings.Contains(out.String(), "not progressing") {
			time.Sleep(200 * time.Millisecond)
		}
		cancel()
	}()
	commands.Main(ctx, []string{"playbook", "run", "--address", server.Address, "--task-queue", queue, "--id", "stuck-run", "--detach=false", file}, &out, &errOut)
	defer tc.TerminateWorkflow(context.Background(), "stuck-run", "", "test over")
	require.Regexp(t, `\(run\)\s+not progressing: its workflow task failed \d+ times in a row \(workflow_worker_unhandled_failure: this worker cannot run playbooks\)`, errOut.String()+out.String())
}

// A number JSON cannot carry is refused at submission, naming the file and
// line: before, the run started and its workflow task could not encode the
// retry policy, on every attempt.
func TestNaNInARetryBlockIsRefused(t *testing.T) {
	parallel(t)
	file := filepath.Join(t.TempDir(), "nan.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`metadata: {name: nan-retry}
workflow:
  - step: a
    tool: { kind: shell, command: "true" }
    retry: { max_attempts: 3, backoff_multiplier: .nan }
`), 0o644))
	code, out, errOut := cli(t, "run", "--address", server.Address, file)
	require.Equal(t, 2, code, out)
	require.Contains(t, errOut, "nan.yaml:5: step \"a\": retry.backoff_multiplier must be a finite number")
}

// hasMarker tells whether a run recorded the version marker of a change.
func hasMarker(t *testing.T, workflowID, change string) bool {
	for _, e := range history(t, workflowID, "").GetEvents() {
		if a := e.GetMarkerRecordedEventAttributes(); a != nil && strings.Contains(a.GetDetails()["change-id"].String(), change) {
			return true
		}
	}
	return false
}

// 2,100 steps ready at once: Temporal fails a workflow task that leaves
// more than 2,000 activities pending, so a run keeps 1,000 running and the
// rest wait for a slot; the run completes.
func TestWideFanOutCompletes(t *testing.T) {
	parallel(t, alone("cpu"))
	queue := ownQueueWorker(t, "hang-fan-out")
	agg := endsWithin(t, 3*time.Minute, wideFanOut(2100), "--task-queue", queue)
	require.Equal(t, "completed", agg.Status)
	require.Equal(t, 2099.0, agg.Steps["s2099"].Result)
	require.True(t, hasMarker(t, agg.WorkflowID, "running-cap"))
}
