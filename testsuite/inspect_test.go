package testsuite

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"

	"playbook/interpreter/contract"
	"playbook/runs"
)

// status and events on a finished failed run show the failed step with its
// attempts, error and routed_to_end, and the end evaluation.
func TestStatusAndEventsOfAFailedRun(t *testing.T) {
	parallel(t)
	r := runExample(t, "failure_cleanup.yaml")
	id := r.agg.WorkflowID
	code, out, errOut := cli(t, "status", "--address", server.Address, id)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Run "+id+" (playbook failure-cleanup): failed, 1 of 5 steps failed")
	require.Regexp(t, `transform\s+failed\s+1\s+\d\d:\d\d:\d\d\s+\d\d:\d\d:\d\d\s+exit_code: exited with code 3: disk full \(routed to end\)`, out)
	require.Regexp(t, `report\s+skipped\s+0\s+-\s+\d\d:\d\d:\d\d\s+upstream transform failed`, out)

	code, out, errOut = cli(t, "status", "--address", server.Address, "--json", id)
	require.Equal(t, 0, code, errOut)
	var st runs.Status
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Equal(t, "failed", st.Aggregate.Status)
	require.True(t, st.Aggregate.Steps["transform"].RoutedToEnd)
	require.NotNil(t, st.Aggregate.Steps["transform"].StartedAt)

	code, out, errOut = cli(t, "events", "--address", server.Address, id)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `step_failed\s+transform\s+attempt 1\s+routed to end\s+\[exit_code: exited with code 3: disk full\] routed_to_end=true original_failed_step=transform`, out)
	require.Regexp(t, `step_skipped\s+report\s+upstream transform failed`, out)
	require.Regexp(t, `end_evaluated\s+end\s+1 of 5 steps failed; run failed evaluated_by_end_step=true total_steps=5 failed_steps_count=1`, out)
	require.Contains(t, out, "playbook_failed")
	require.Contains(t, out, "workflow_failed")

	r = runExample(t, "flaky.yaml")
	code, out, _ = cli(t, "events", "--address", server.Address, "--json", r.agg.WorkflowID)
	require.Equal(t, 0, code)
	var retries []int
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e struct {
			Type     string
			Attempts int
		}
		require.NoError(t, json.Unmarshal([]byte(line), &e))
		if e.Type == "step_retry" {
			retries = append(retries, e.Attempts)
		}
	}
	require.Equal(t, []int{1, 2}, retries, "each retried attempt is an event")
}

// A step running its first attempt counts it in ATTEMPTS: 1, not the 0
// the run knows until the step settles.
func TestStatusCountsTheRunningAttempt(t *testing.T) {
	parallel(t)
	file := filepath.Join(t.TempDir(), "slow.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`metadata: {name: slow-status}
workflow:
  - step: slow
    tool: {kind: shell, command: 'sleep 30'}
`), 0o644))
	run := start(t, file, "playbook", nil)
	defer func() { _ = tc.TerminateWorkflow(context.Background(), run.GetID(), "", "test over") }()
	waitFor(t, "the first attempt to run", func() bool {
		d, err := tc.DescribeWorkflowExecution(context.Background(), run.GetID(), "")
		return err == nil && len(d.GetPendingActivities()) == 1 && d.GetPendingActivities()[0].GetState() == enums.PENDING_ACTIVITY_STATE_STARTED
	})
	code, out, errOut := cli(t, "status", "--address", server.Address, run.GetID())
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^slow\s+running\s+1\s+\d\d:\d\d:\d\d\s+-\s*$`, out)

	// The state query, as any Temporal client asks it, names the run as
	// its result will.
	agg, err := queryState(run.GetID())
	require.NoError(t, err)
	require.Equal(t, contract.RunRunning, agg.Status)
	require.Equal(t, run.GetID(), agg.WorkflowID)
	require.Equal(t, run.GetRunID(), agg.RunID)
}

// During a step's backoff, status shows it retrying with its attempt number
// and next attempt time, from the server's pending-activity view.
func TestStatusDuringBackoff(t *testing.T) {
	parallel(t)
	file := filepath.Join(t.TempDir(), "backoff.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`metadata: {name: backoff}
workflow:
  - step: wobbly
    tool: {kind: shell, command: 'echo "not yet" >&2; exit 1'}
    retry: {max_attempts: 3, initial_delay: 4s, jitter: false}
`), 0o644))
	run := start(t, file, "playbook", nil)
	waitFor(t, "the first retry to be scheduled", func() bool {
		d, err := tc.DescribeWorkflowExecution(context.Background(), run.GetID(), "")
		return err == nil && len(d.GetPendingActivities()) == 1 &&
			d.GetPendingActivities()[0].GetAttempt() == 2 && d.GetPendingActivities()[0].GetState() == enums.PENDING_ACTIVITY_STATE_SCHEDULED
	})
	code, out, errOut := cli(t, "status", "--address", server.Address, run.GetID())
	require.Equal(t, 0, code, errOut)
	// ATTEMPTS counts the attempt the server runs, as the note does (#38).
	require.Regexp(t, `wobbly\s+running\s+2\s+\d\d:\d\d:\d\d\s+-\s+retrying: attempt 2 of 3, next attempt at \d\d:\d\d:\d\d\.\d; last failure: exited with code 1: not yet`, out)

	code, out, _ = cli(t, "status", "--address", server.Address, "--json", run.GetID())
	require.Equal(t, 0, code)
	var st runs.Status
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	live := st.Live["wobbly"]
	require.Equal(t, int32(2), live.Attempt)
	require.NotNil(t, live.NextAttemptTime)
	require.NoError(t, tc.TerminateWorkflow(context.Background(), run.GetID(), "", "done looking"))
}

// list --status failed --playbook NAME lists exactly that playbook's failed
// runs, through the search attributes the dev server registers.
func TestListFailedRunsOfAPlaybook(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	write := func(name string) string {
		file := filepath.Join(dir, name+".yaml")
		require.NoError(t, os.WriteFile(file, []byte("metadata: {name: "+name+"}\nworkload: {fail: false}\nworkflow:\n  - step: maybe\n    tool: {kind: shell, command: 'test \"$F\" != true', env: {F: \"{{ workload.fail }}\"}}\n"), 0o644))
		return file
	}
	a, b := write("list-a"), write("list-b")
	var want []string
	for i, args := range [][]string{{a, "fail=true"}, {a, "fail=true"}, {a, "fail=false"}, {b, "fail=true"}} {
		code, out, errOut := cli(t, "run", "--address", server.Address, "--json", "--set", args[1], args[0])
		require.Equal(t, map[bool]int{true: 1, false: 0}[args[1] == "fail=true"], code, errOut)
		var agg struct {
			WorkflowID string `json:"workflow_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &agg))
		if i < 2 {
			want = append(want, agg.WorkflowID)
		}
	}
	sort.Strings(want)
	var got []string
	waitFor(t, "visibility to list both failed runs", func() bool {
		code, out, _ := cli(t, "list", "--address", server.Address, "--status", "failed", "--playbook", "list-a", "--json")
		if code != 0 {
			return false
		}
		var runs []runs.Run
		if json.Unmarshal([]byte(out), &runs) != nil {
			return false
		}
		got = nil
		for _, r := range runs {
			require.Equal(t, "list-a", r.Playbook)
			require.Equal(t, "failed", r.Status)
			require.Equal(t, []string{"maybe"}, r.FailedSteps)
			got = append(got, r.WorkflowID)
		}
		sort.Strings(got)
		return len(got) >= 2
	})
	require.Equal(t, want, got, "exactly the failed runs of list-a")

	code, out, _ := cli(t, "list", "--address", server.Address, "--playbook", "list-a")
	require.Equal(t, 0, code)
	require.Contains(t, out, "RUN")
	require.Equal(t, 3, strings.Count(out, "list-a-"), "all three runs of list-a, and not list-b's")
}

func TestSetupIsIdempotent(t *testing.T) {
	// Serial: `setup` changes the namespace every run uses (see parallel).
	code, out, errOut := cli(t, "setup", "--address", server.Address)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "Namespace default has playbook's search attributes (0 added).\n", out)
}

// A command about a run the server does not know says so in words, after
// the server's own.
func TestACommandAboutAnUnknownRunSaysSo(t *testing.T) {
	parallel(t)
	for _, args := range [][]string{{"status"}, {"cancel"}, {"approve", "x"}} {
		code, _, errOut := cli(t, append([]string{args[0], "--address", server.Address, "no-such-run"}, args[1:]...)...)
		require.Equal(t, 1, code, errOut)
		require.Contains(t, errOut, args[0]+": workflow not found for ID: no-such-run (the server knows no run no-such-run in this namespace: a mistyped ID, or its retention removed it)")
	}
}
