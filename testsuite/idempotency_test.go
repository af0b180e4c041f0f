package testsuite

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// startedLine is what `run --detach` prints: whether it started the run
// or answered one submitted before, its ID and Temporal run ID.
var startedLine = regexp.MustCompile(`^(Started|Already submitted, not started again:) (\S+) \(run (\S+)\)`)

// detachedRun runs `playbook run --detach` with args and reads its line.
func detachedRun(t *testing.T, args ...string) (started bool, id, runID string) {
	t.Helper()
	code, out, errOut := cli(t, append([]string{"run", "--address", server.Address, "--detach"}, args...)...)
	require.Equal(t, 0, code, errOut)
	m := startedLine.FindStringSubmatch(out)
	require.NotNil(t, m, out)
	return m[1] == "Started", m[2], m[3]
}

// TestIdempotencyKeyStartsOneRun: 100 submits at once with one key start
// exactly one run, and every one of them names it; a submit with the key
// after the run ended still answers it (acceptance 5 of #44).
func TestIdempotencyKeyStartsOneRun(t *testing.T) {
	parallel(t)
	key := fmt.Sprintf("deliver-%s", t.Name())
	type answer struct {
		started   bool
		id, runID string
	}
	answers := make([]answer, 100)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			started, id, runID := detachedRun(t, "--idempotency-key", key, "--set", "who=once", "../playbooks/hello.yaml")
			answers[i] = answer{started, id, runID}
		})
	}
	wg.Wait()
	startedCount := 0
	for _, a := range answers {
		if a.started {
			startedCount++
		}
		require.Equal(t, answers[0].id, a.id)
		require.Equal(t, answers[0].runID, a.runID, "every submit names the one run")
	}
	require.Equal(t, 1, startedCount, "exactly one submit started the run")
	id := answers[0].id
	require.True(t, strings.HasPrefix(id, "hello-"), id)

	// The one execution of that ID, as the server lists it.
	var agg map[string]any
	require.NoError(t, tc.GetWorkflow(context.Background(), id, "").Get(context.Background(), &agg))
	require.Equal(t, "completed", agg["status"])
	desc, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(t, err)
	require.Equal(t, answers[0].runID, desc.WorkflowExecutionInfo.Execution.RunId)

	// Ended, the run is still the key's: followed, not run again.
	code, out, errOut := cli(t, "run", "--address", server.Address, "--idempotency-key", key, "../playbooks/hello.yaml")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut+out, "Already submitted, not started again: "+id+" (run "+answers[0].runID+")")
	desc, err = tc.DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(t, err)
	require.Equal(t, answers[0].runID, desc.WorkflowExecutionInfo.Execution.RunId, "no second run")

	// Another key is another run.
	started, other, _ := detachedRun(t, "--idempotency-key", key+"-2", "../playbooks/hello.yaml")
	require.True(t, started)
	require.NotEqual(t, id, other)
}

// TestIDConflictUseExisting: with an open run holding --id, `--id-conflict
// use-existing` answers that run where the default refuses (exit 2); the
// flags that do not go together are refused before anything starts.
func TestIDConflictUseExisting(t *testing.T) {
	parallel(t)
	id := "approval-idconflict"
	started, _, runID := detachedRun(t, "--id", id, "../playbooks/approval.yaml")
	require.True(t, started)
	t.Cleanup(func() { _ = tc.TerminateWorkflow(context.Background(), id, "", "test over") })

	code, _, errOut := cli(t, "run", "--address", server.Address, "--detach", "--id", id, "../playbooks/approval.yaml")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "a run with ID "+id+" is still open")

	started, got, gotRun := detachedRun(t, "--id", id, "--id-conflict", "use-existing", "../playbooks/approval.yaml")
	require.False(t, started)
	require.Equal(t, id, got)
	require.Equal(t, runID, gotRun)

	for _, bad := range []struct {
		args []string
		says string
	}{
		{[]string{"--id", id, "--idempotency-key", "k"}, "give one"},
		{[]string{"--id-conflict", "use-existing"}, "needs --id"},
		{[]string{"--id", id, "--id-conflict", "maybe"}, "write fail or use-existing"},
		{[]string{"--idempotency-key", " "}, "--idempotency-key must be"},
	} {
		code, _, errOut := cli(t, append(append([]string{"run", "--address", server.Address, "--detach"}, bad.args...), "../playbooks/approval.yaml")...)
		require.Equal(t, 2, code, errOut)
		require.Contains(t, errOut, bad.says)
	}
}
