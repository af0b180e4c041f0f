package testsuite

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"playbook/interpreter/contract"
)

// localActivityMarker is the marker the SDK records for a local activity.
const localActivityMarker = "LocalActivity"

// eventCounts counts a history's local activity markers, activity events
// and timers.
type eventCounts struct{ markers, activityEvents, timers int }

func localEvents(h *historypb.History) eventCounts {
	var c eventCounts
	for _, e := range h.GetEvents() {
		switch e.GetEventType() {
		case enums.EVENT_TYPE_MARKER_RECORDED:
			if e.GetMarkerRecordedEventAttributes().GetMarkerName() == localActivityMarker {
				c.markers++
			}
		case enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, enums.EVENT_TYPE_ACTIVITY_TASK_STARTED, enums.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
			enums.EVENT_TYPE_ACTIVITY_TASK_FAILED, enums.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT, enums.EVENT_TYPE_ACTIVITY_TASK_CANCELED,
			enums.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED:
			c.activityEvents++
		case enums.EVENT_TYPE_TIMER_STARTED:
			c.timers++
		}
	}
	return c
}

// A chain of local shell steps completes with the results the same chain
// of ordinary steps gives, each step's attempt logged as any attempt is;
// its history holds one local activity marker per step and no activity
// event. A noop step stays in the workflow under the playbook's default,
// and a step that says local: false is an activity (a python step here,
// whose interpreter may take seconds to start on a loaded machine).
func TestLocalStepsRunAsLocalActivities(t *testing.T) {
	parallel(t)
	chain := func(local string) string {
		return `metadata: {name: local-chain}
local: ` + local + `
workflow:
  - step: first
    tool: { kind: shell, command: 'echo "{\"n\": 1}"' }
    next: second
  - step: second
    tool: { kind: shell, command: 'echo "{\"n\": $((N + 1))}"; echo "to stderr" >&2', env: { N: "{{ steps.first.result.json.n }}" } }
    next: third
  - step: third
    local: false
    tool: { kind: python, code: "def main(n): return {'n': n + 1}", args: { n: "{{ steps.second.result.json.n }}" } }
    next: last
  - step: last
    tool: { kind: noop, result: "{{ steps.third.result.n * 10 }}" }
`
	}
	local, plain := runFile(t, chain("true")), runFile(t, chain("false"))
	require.Equal(t, "completed", local.Status, "%s", func() string { b, _ := json.Marshal(local); return string(b) }())
	for _, name := range []string{"first", "second", "third", "last"} {
		require.Equal(t, plain.Steps[name].Status, local.Steps[name].Status, name)
		require.Equal(t, plain.Steps[name].Result, local.Steps[name].Result, name)
		require.Equal(t, plain.Steps[name].Attempts, local.Steps[name].Attempts, name)
	}
	require.Equal(t, 30.0, local.Steps["last"].Result)
	require.Equal(t, "to stderr\n", readLog(t, local.WorkflowID, "second", "attempt-1.stderr"))

	c := localEvents(history(t, local.WorkflowID, local.RunID))
	require.Equal(t, eventCounts{markers: 2, activityEvents: 3}, c, "one marker per local step, no activity but the step that is not local")
	c = localEvents(history(t, plain.WorkflowID, plain.RunID))
	require.Zero(t, c.markers)
	require.Equal(t, 9, c.activityEvents, "the same chain without local: three activities")
}

// A failing local step retries by its retry block and its exit-code rules
// (recovery script included), Temporal's local retries in the worker; a
// delay past spec.LocalRetryWithin is a timer in the run's history, and
// the attempts before it stay on record.
func TestLocalStepRetriesByItsRules(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "recover.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho \"recovered after $PLAYBOOK_ATTEMPT ($PLAYBOOK_RETURN_CODE)\" >> "+filepath.Join(dir, "recovered")+"\n"), 0o755))
	file := filepath.Join(dir, "local-retry.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`metadata: {name: local-retry}
local: true
failure_handlers:
  - name: fix
    rules:
      - exit_codes: [3]
        max_retries: 2
        recovery_script: `+script+`
workflow:
  - step: flaky
    tool: { kind: shell, command: '[ "$PLAYBOOK_ATTEMPT" -ge 3 ] || exit 3' }
    failure_handler: fix
  - step: later
    retry: { max_attempts: 2, initial_delay: 2500ms, jitter: false }
    tool: { kind: shell, command: '[ "$PLAYBOOK_ATTEMPT" -ge 2 ] || exit 7' }
  - step: doomed
    timeout: 2s
    allow_failure: true
    retry: { max_attempts: 3, initial_delay: 100ms, stop_when: "exit_code == 9" }
    tool: { kind: shell, command: 'if [ "$PLAYBOOK_ATTEMPT" = 1 ]; then sleep 10; fi; exit 9' }
`), 0o644))
	code, out, errOut := cli(t, "run", "--address", server.Address, "--json", file)
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &agg), errOut)
	require.Equal(t, 0, code, errOut)
	replay(t, "", agg.WorkflowID, agg.RunID)
	require.Equal(t, "completed_with_warnings", agg.Status)

	flaky := agg.Steps["flaky"]
	require.Equal(t, 3, flaky.Attempts)
	require.Len(t, flaky.AttemptErrors, 2)
	for i, rec := range flaky.AttemptErrors {
		require.Equal(t, i+1, rec.Attempt)
		require.Equal(t, "exit_code", rec.Error.Type)
		require.Equal(t, contract.RecoveryRetried, rec.Recovery)
	}
	recovered, err := os.ReadFile(filepath.Join(dir, "recovered"))
	require.NoError(t, err)
	require.Equal(t, "recovered after 1 (3)\nrecovered after 2 (3)\n", string(recovered))

	later := agg.Steps["later"]
	require.Equal(t, contract.StatusCompleted, later.Status)
	require.Equal(t, 2, later.Attempts)
	require.Len(t, later.AttemptErrors, 1, "the attempt before the timer is on record")
	require.Equal(t, 1, later.AttemptErrors[0].Attempt)

	doomed := agg.Steps["doomed"]
	require.Equal(t, contract.StatusFailed, doomed.Status)
	require.Equal(t, "exit_code", doomed.Error.Type)
	require.Equal(t, 2, doomed.Attempts)
	require.Len(t, doomed.AttemptErrors, 2)
	require.Equal(t, contract.ErrExecutionTimeout, doomed.AttemptErrors[0].Error.Type, "the first attempt ran past its timeout and was killed")

	c := localEvents(history(t, agg.WorkflowID, agg.RunID))
	require.Zero(t, c.activityEvents)
	require.Equal(t, 1, c.timers, "the 2.5s delay is a timer; the others were waited in the worker")
	require.Equal(t, 4, c.markers, "flaky and doomed: one marker each; later: one before its timer, one after")
}

// A loop of a local step runs its elements as local activities, in the
// run and in a long loop's driver.
func TestLocalLoopElements(t *testing.T) {
	parallel(t)
	agg := runFile(t, `metadata: {name: local-loop}
workflow:
  - step: short
    local: true
    loop: { in: "1..5", mode: parallel, max_in_flight: 2 }
    tool: { kind: shell, command: 'echo "{\"twice\": $((I * 2))}"', env: { I: "{{ item }}" } }
  - step: long
    local: true
    loop: { in: "1..501", mode: parallel, max_in_flight: 20 }
    tool: { kind: shell, command: 'echo "$I"', env: { I: "{{ item }}" } }
`)
	require.Equal(t, "completed", agg.Status)
	var twice []any
	for _, r := range agg.Steps["short"].Result.([]any) {
		twice = append(twice, r.(map[string]any)["json"].(map[string]any)["twice"])
	}
	require.Equal(t, []any{2.0, 4.0, 6.0, 8.0, 10.0}, twice)
	long := agg.Steps["long"].Result.([]any)
	require.Len(t, long, 501)
	require.Equal(t, 501.0, long[500].(map[string]any)["json"])

	c := localEvents(history(t, agg.WorkflowID, agg.RunID))
	require.Equal(t, eventCounts{markers: 5}, c, "the short loop's elements ran in the run")
	driver := history(t, agg.WorkflowID+".long.loop", "")
	c = localEvents(driver)
	require.Zero(t, c.activityEvents)
	require.Equal(t, 501, c.markers, "the long loop's elements ran in its driver")
}

// A local loop element whose retry delay is too long to wait in the worker
// waits it on a timer, in the run or in the loop's driver, and runs again
// while the other elements go on; the loops take the new side of
// local-elements-direct: their elements' first local activities are
// scheduled by the loop itself.
func TestLocalLoopElementRetriesOnATimer(t *testing.T) {
	parallel(t)
	const retry = `retry: { max_attempts: 2, initial_delay: 2500ms, jitter: false }`
	agg := runFile(t, `metadata: {name: local-loop-retry}
local: true
workflow:
  - step: short
    loop: { in: "1..4", mode: parallel, max_in_flight: 2 }
    `+retry+`
    tool: { kind: shell, command: '[ "$I" != 2 ] || [ "$PLAYBOOK_ATTEMPT" -ge 2 ] || exit 7; echo "$I $PLAYBOOK_ATTEMPT"', env: { I: "{{ item }}" } }
  - step: long
    loop: { in: "1..501", mode: parallel, max_in_flight: 20 }
    `+retry+`
    tool: { kind: shell, command: '[ "$I" != 300 ] || [ "$PLAYBOOK_ATTEMPT" -ge 2 ] || exit 7; echo "$I $PLAYBOOK_ATTEMPT"', env: { I: "{{ item }}" } }
`)
	require.Equal(t, "completed", agg.Status)
	var short []any
	for _, r := range agg.Steps["short"].Result.([]any) {
		short = append(short, r.(map[string]any)["stdout"])
	}
	require.Equal(t, []any{"1 1\n", "2 2\n", "3 1\n", "4 1\n"}, short, "element 2 ran again after its timer")
	long := agg.Steps["long"].Result.([]any)
	require.Len(t, long, 501)
	require.Equal(t, "300 2\n", long[299].(map[string]any)["stdout"])
	require.Equal(t, "301 1\n", long[300].(map[string]any)["stdout"])

	h := history(t, agg.WorkflowID, agg.RunID)
	require.Equal(t, eventCounts{markers: 5, timers: 1}, localEvents(h), "the short loop: a marker for each local activity, and the timer between element 2's")
	require.True(t, markerIn(h, "local-elements-direct"))
	driver := history(t, agg.WorkflowID+".long.loop", "")
	require.Equal(t, eventCounts{markers: 502, timers: 1}, localEvents(driver), "the long loop, in its driver")
	require.True(t, markerIn(driver, "local-elements-direct"))
	replay(t, "change_local_elements_direct_driver", agg.WorkflowID+".long.loop", "")
}

// A worker killed while a local step runs loses the attempt with the
// workflow task that ran it: the task times out, another worker replays
// the run, finds no marker, and runs the step again; the run completes.
func TestWorkerKilledDuringALocalStep(t *testing.T) {
	parallel(t)
	queue := fmt.Sprintf("local-kill-%d", time.Now().UnixNano())
	marker := fmt.Sprintf("playbook-local-kill-%d", time.Now().UnixNano())
	dir := t.TempDir()
	starts := filepath.Join(dir, "starts")
	file := filepath.Join(dir, "local-kill.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`metadata: {name: local-kill}
workflow:
  - step: before
    local: true
    tool: { kind: shell, command: 'echo before >> `+starts+`' }
    next: work
  - step: work
    local: true
    timeout: 4s
    tool: { kind: shell, command: 'echo "$PLAYBOOK_ATTEMPT" >> `+starts+`; sleep 2 # `+marker+`' }
`), 0o644))
	logs := t.TempDir()
	_, _, first := startObservedWorker(t, queue, logs)
	run := start(t, file, queue, nil)
	waitFor(t, "the local step to start on the first worker", func() bool {
		b, _ := os.ReadFile(starts)
		return strings.Contains(string(b), "1")
	})
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	// The dead worker's step dies with it: the keeper of its process
	// groups saw the worker go.
	waitForNoProcess(t, marker, 5*time.Second)
	startObservedWorker(t, queue, logs)

	agg := finish(t, run)
	require.Equal(t, "completed", agg.Status)
	b, err := os.ReadFile(starts)
	require.NoError(t, err)
	// Run again from its first attempt: no worker kept count of the lost
	// one. So did the local step before it, which had completed in the
	// same workflow task: its marker was not recorded either.
	require.Equal(t, []string{"before", "1", "before", "1"}, strings.Fields(string(b)))
	h := history(t, run.GetID(), run.GetRunID())
	c := localEvents(h)
	require.Zero(t, c.activityEvents)
	require.Equal(t, 2, c.markers, "one marker per step: the lost workflow task left none")
	timedOut := 0
	for _, e := range h.GetEvents() {
		if e.GetEventType() == enums.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT {
			timedOut++
		}
	}
	require.Positive(t, timedOut, "the killed worker's workflow task timed out")
	replay(t, "", run.GetID(), run.GetRunID())
}

// A local step over the timeout bound is refused before anything starts:
// one line, exit 2.
func TestLocalStepOverItsBoundIsRefused(t *testing.T) {
	parallel(t)
	file := filepath.Join(t.TempDir(), "too-long.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`metadata: {name: too-long}
workflow:
  - step: slow
    local: true
    timeout: 30s
    tool: { kind: shell, command: "sleep 20" }
`), 0o644))
	for _, args := range [][]string{{"validate", file}, {"run", "--address", server.Address, file}} {
		code, _, errOut := cli(t, args...)
		require.Equal(t, 2, code, errOut)
		require.Equal(t, file+`:5: step "slow": timeout 30s is over the 5s a local step may run: it cannot heartbeat, so an attempt must end within one workflow task (leave local out for a longer step)`, strings.TrimSpace(errOut))
	}
}
