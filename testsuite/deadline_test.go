package testsuite

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"

	"playbook/interpreter/contract"
)

// Acceptance (#31): a 3 s playbook timeout over a 60 s step ends the run
// failed within seconds: the step is cancelled with the deadline as its
// reason, the cleanup step runs, then end, the aggregate records the
// deadline, and `playbook run` says so and exits 1.
func TestRunDeadline(t *testing.T) {
	parallel(t, counts("playbook-deadline"))
	began := time.Now()
	code, out, errOut := cli(t, "run", "--address", server.Address, "--id", "deadline-1", "../playbooks/deadline.yaml")
	took := time.Since(began)
	require.Equal(t, 1, code, errOut)
	require.Less(t, took, 30*time.Second, "the deadline, not the 60 s step, ended the run")
	require.GreaterOrEqual(t, took, 3*time.Second)
	require.Contains(t, out, "the run's deadline of 3s passed: running steps are cancelled, the rest skipped\n")
	require.Regexp(t, `work +cancelled +1 +timeout: the run's deadline of 3s passed \(routed to end\)`, out)
	require.Contains(t, out, "Run deadline-1 failed: the run's deadline of 3s passed (on_timeout: cancel); 0 of 3 steps failed.\n")

	run := tc.GetWorkflow(context.Background(), "deadline-1", "")
	agg := finish(t, run)
	replay(t, "deadline.yaml", run.GetID(), run.GetRunID())
	require.Equal(t, contract.RunFailed, agg.Status)
	require.NotNil(t, agg.Timeout)
	require.Equal(t, "3s", agg.Timeout.After)
	require.Equal(t, "cancel", agg.Timeout.OnTimeout)
	require.Empty(t, agg.Timeout.SetBy, "its own timeout")
	work := agg.Steps["work"]
	require.Equal(t, contract.StatusCancelled, work.Status)
	require.Equal(t, contract.ErrTimeout, work.Error.Type)
	require.Equal(t, "the run's deadline of 3s passed", work.Error.Message)
	require.Equal(t, "lock released; deadline passed: true\n", agg.Steps["unlock"].Result.(map[string]any)["stdout"], "the cleanup step ran and read run.timed_out")
	require.Equal(t, contract.StatusCompleted, agg.Steps["end"].Status)
	require.Equal(t, "deadline passed: true", agg.Steps["end"].Result, "end ran, after the deadline")
	require.True(t, agg.Steps["unlock"].EndedAt.Compare(*agg.Steps["end"].StartedAt) <= 0, "end ran after the cleanup step")
	require.Empty(t, processesMatching("playbook-deadline"), "no sleep is left")

	// The workflow failed with the deadline in its message.
	h := history(t, run.GetID(), run.GetRunID())
	last := h.Events[len(h.Events)-1]
	require.Equal(t, enums.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED, last.GetEventType())
	require.Equal(t, "playbook deadline failed: 0 of 3 steps failed; the run's deadline of 3s passed (on_timeout: cancel)",
		last.GetWorkflowExecutionFailedEventAttributes().GetFailure().GetMessage())
	require.Contains(t, workflowMetadata(t, "deadline-1").GetCurrentDetails(), "**failed**: the run's deadline of 3s passed (on_timeout: cancel)", "the Web UI's details lead with it")
	code, out, _ = cli(t, "status", "--address", server.Address, "deadline-1")
	require.Equal(t, 0, code)
	require.Contains(t, out, "Run deadline-1 (playbook deadline): failed, the run's deadline of 3s passed (on_timeout: cancel), 0 of 3 steps failed\n", "status leads with it")
}

// on_timeout: fail fails the run whatever success_when says; under the
// default, cancel, a success_when may accept it.
func TestOnTimeoutDecidesWithSuccessWhen(t *testing.T) {
	parallel(t, carries("playbook-deadline"))
	dir := t.TempDir()
	for _, c := range []struct {
		onTimeout, successWhen, status string
		code                           int
	}{
		{"fail", "true", contract.RunFailed, 1},
		{"cancel", "run.timed_out and failed_steps_count == 0", contract.RunCompleted, 0},
	} {
		file := writePlaybook(t, dir, "deadline_"+c.onTimeout+".yaml", `metadata: {name: deadline-`+c.onTimeout+`}
timeout: 2s
on_timeout: `+c.onTimeout+`
workflow:
  - {step: slow, tool: {kind: shell, command: "sleep 60 # playbook-deadline-tolerant"}}
  - {step: end, success_when: "`+c.successWhen+`"}
`)
		began := time.Now()
		code, agg := runJSON(t, file)
		require.Less(t, time.Since(began), 30*time.Second)
		require.Equal(t, c.code, code, c.onTimeout)
		require.Equal(t, c.status, agg.Status, c.onTimeout)
		require.Equal(t, c.onTimeout, agg.Timeout.OnTimeout)
		require.Equal(t, contract.ErrTimeout, agg.Steps["slow"].Error.Type)
	}
	require.Empty(t, processesMatching("playbook-deadline-tolerant"))
}

// A sub-playbook inherits what is left of its parent's deadline: the child,
// without a timeout of its own, ends by the parent's (its end runs), and
// the parent fails within bounds.
func TestSubPlaybookInheritsTheDeadline(t *testing.T) {
	parallel(t, carries("playbook-deadline"))
	dir := t.TempDir()
	writePlaybook(t, dir, "child.yaml", `metadata: {name: child}
workflow:
  - {step: sleep, tool: {kind: shell, command: "sleep 60 # playbook-deadline-child"}}
  - {step: end, tool: {kind: noop, result: "child deadline passed: {{ run.timed_out }}"}}
`)
	parent := writePlaybook(t, dir, "parent.yaml", `metadata: {name: parent-deadline}
timeout: 3s
workflow:
  - {step: child, tool: {kind: playbook, path: child.yaml}}
`)
	began := time.Now()
	code, agg := runJSON(t, "--id", "deadline-parent-1", parent)
	replay(t, "deadline_inherited.yaml", agg.WorkflowID, agg.RunID)
	require.Less(t, time.Since(began), 30*time.Second)
	require.Equal(t, 1, code)
	require.Equal(t, contract.RunFailed, agg.Status)
	require.Equal(t, "3s", agg.Timeout.After)
	step := agg.Steps["child"]
	require.Equal(t, contract.StatusCancelled, step.Status, "the child ended by the deadline it inherited, and the step with it")
	require.Equal(t, contract.ErrTimeout, step.Error.Type)
	require.Equal(t, "the run's deadline of 3s passed", step.Error.Message)
	require.Zero(t, agg.FailedStepsCount)
	child, ok := step.Error.Details.(map[string]any)
	require.True(t, ok, "the child's aggregate is in the step's error: %+v", step.Error)
	require.Equal(t, "failed", child["status"])
	require.Equal(t, map[string]any{"after": "3s", "on_timeout": "cancel", "deadline": agg.Timeout.Deadline, "set_by": "deadline-parent-1"}, child["timeout"])
	steps := child["steps"].(map[string]any)
	require.Equal(t, "timeout", steps["sleep"].(map[string]any)["error"].(map[string]any)["type"])
	require.Equal(t, "child deadline passed: true", steps["end"].(map[string]any)["result"], "the child's end ran")
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_FAILED, workflowStatus(t, "deadline-parent-1.child"))
	require.Empty(t, processesMatching("playbook-deadline-child"))
}

// cleanupRun starts playbooks/cleanup.yaml with a journal of its own.
func cleanupRun(t *testing.T, name string, workload map[string]any) (journal string, agg func() *contract.Aggregate, id string) {
	journal = filepath.Join(t.TempDir(), "journal")
	workload["journal"] = journal
	run := start(t, "../playbooks/cleanup.yaml", "playbook", workload)
	waitFor(t, "work to run", func() bool { return slices.Equal(runningSteps(tc, run.GetID()), []string{"work"}) })
	return journal, func() *contract.Aggregate {
		agg := finish(t, run)
		replay(t, name, run.GetID(), run.GetRunID())
		return agg
	}, run.GetID()
}

func readJournal(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	return string(b)
}

// Acceptance (#31): on_cancel: run (and always: true) runs on `playbook
// cancel`, on a drain, and after a failure; end runs after it.
func TestCleanupStepsRunOnCancelDrainAndFailure(t *testing.T) {
	parallel(t)
	t.Run("cancel", func(t *testing.T) {
		journal, finished, id := cleanupRun(t, "cleanup_cancelled.yaml", map[string]any{"seconds": 60})
		code, _, errOut := cli(t, "cancel", "--address", server.Address, "--reason", "testing cleanup", id)
		require.Equal(t, 0, code, errOut)
		agg := finished()
		require.Equal(t, contract.RunCancelled, agg.Status)
		require.Equal(t, contract.StatusCancelled, agg.Steps["work"].Status)
		require.Equal(t, contract.StatusCompleted, agg.Steps["release"].Status, "the cleanup step ran after the cancel")
		require.Equal(t, "lock released; work cancelled", agg.Steps["tell"].Result, "and the one after it, which read work's status")
		require.Equal(t, "acquired\nreleased\nend\n", readJournal(t, journal), "end ran after the cleanup step")
		require.Empty(t, processesMatching("playbook-cleanup"))
	})
	t.Run("drain", func(t *testing.T) {
		journal, finished, id := cleanupRun(t, "cleanup_drained.yaml", map[string]any{"seconds": 2})
		code, out, errOut := cli(t, "cancel", "--address", server.Address, "--drain", id)
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, "Draining")
		agg := finished()
		require.Equal(t, contract.RunCancelled, agg.Status)
		require.Equal(t, contract.StatusCompleted, agg.Steps["work"].Status, "a drain lets it finish")
		require.Equal(t, contract.StatusCompleted, agg.Steps["release"].Status)
		require.Equal(t, "lock released; work completed", agg.Steps["tell"].Result)
		require.Equal(t, "acquired\nreleased\nend\n", readJournal(t, journal))
	})
	t.Run("failure", func(t *testing.T) {
		journal := filepath.Join(t.TempDir(), "journal")
		r := runExample(t, "cleanup.yaml", "--set", "seconds=0", "--set", "fail=true", "--set", "journal="+journal)
		require.Equal(t, contract.RunFailed, r.agg.Status)
		require.Equal(t, contract.StatusFailed, r.agg.Steps["work"].Status)
		require.Equal(t, contract.StatusCompleted, r.agg.Steps["release"].Status, "always: true runs after a failure")
		require.Equal(t, contract.StatusSkipped, r.agg.Steps["tell"].Status, "on_cancel: run alone follows failure_mode after a failure")
		require.Equal(t, "acquired\nreleased\nend\n", readJournal(t, journal))
	})
}

// A deadline and a cancel: whichever comes first decides how the run ends.
// The deadline first, then a cancel while the cleanup step runs: the run
// fails by its deadline and the cleanup step finishes. A cancel first, then
// the deadline while the cleanup step runs: the run ends cancelled, and
// the aggregate records that the deadline passed too.
func TestDeadlineAndCancelFirstDecides(t *testing.T) {
	parallel(t, carries("playbook-deadline"))
	dir := t.TempDir()
	for _, c := range []struct {
		name        string
		cancelFirst bool
		status      string
		workError   string
	}{
		{"deadline first", false, contract.RunFailed, contract.ErrTimeout},
		{"cancel first", true, contract.RunCancelled, contract.ErrCancelled},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := writePlaybook(t, dir, "both.yaml", `metadata: {name: deadline-and-cancel}
timeout: 3s
workflow:
  - {step: work, tool: {kind: shell, command: "sleep 60 # playbook-deadline-cancel"}}
  - {step: cleanup, depends_on: [work], on_cancel: run, tool: {kind: shell, command: "sleep 4; echo cleaned"}}
`)
			run := start(t, file, "playbook", nil)
			waitFor(t, "work to run", func() bool { return slices.Equal(runningSteps(tc, run.GetID()), []string{"work"}) })
			if c.cancelFirst {
				code, _, errOut := cli(t, "cancel", "--address", server.Address, run.GetID())
				require.Equal(t, 0, code, errOut)
			}
			waitFor(t, "the cleanup step to run", func() bool { return slices.Equal(runningSteps(tc, run.GetID()), []string{"cleanup"}) })
			if !c.cancelFirst {
				code, out, errOut := cli(t, "cancel", "--address", server.Address, run.GetID())
				require.Equal(t, 0, code, errOut)
				require.Equal(t, "Cancel requested for "+run.GetID()+", whose deadline has passed: it already winds down, and ends as its on_timeout says; its cleanup steps are not cancelled.\n", out)
			}
			agg := finish(t, run)
			replay(t, "deadline_and_cancel_"+strings.ReplaceAll(c.name, " ", "_")+".yaml", run.GetID(), run.GetRunID())
			require.Equal(t, c.status, agg.Status)
			require.Equal(t, c.workError, agg.Steps["work"].Error.Type)
			require.Equal(t, contract.StatusCompleted, agg.Steps["cleanup"].Status, "the cleanup step was not cancelled")
			require.Equal(t, "cleaned\n", agg.Steps["cleanup"].Result.(map[string]any)["stdout"])
			require.NotNil(t, agg.Timeout, "the deadline passed either way")
			var types []string
			for _, e := range runEvents(t, run.GetID(), run.GetRunID()) {
				if e.Type == "deadline_passed" || e.Type == "cancel_requested" {
					types = append(types, e.Type)
				}
			}
			want := []string{"deadline_passed", "cancel_requested"}
			if c.cancelFirst {
				want = []string{"cancel_requested", "deadline_passed"}
			}
			require.Equal(t, want, types)
		})
	}
	require.Empty(t, processesMatching("playbook-deadline-cancel"))
}
