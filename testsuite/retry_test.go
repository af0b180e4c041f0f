package testsuite

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
)

// retry after a run whose middle step failed: the new run completes, the
// first step is reused and did not run again (its side-effect file proves
// it); --step reruns a step and what follows it.
func TestRetryReusesCompletedSteps(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "input.txt"), []byte("bad\n"), 0o644))
	first := runExample(t, "retry_demo.yaml", "--set", "dir="+dir)
	require.Equal(t, 1, first.code)
	require.Equal(t, []string{"transform"}, first.agg.FailedSteps)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "input.txt"), []byte("ok\n"), 0o644))
	code, out, errOut := cli(t, "retry", "--address", server.Address, "--json", "--reason", "input fixed", first.agg.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "Retrying "+first.agg.WorkflowID+" as retry-demo-")
	require.Contains(t, errOut, "reusing 1 completed step: fetch")
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &agg))
	require.Equal(t, "completed", agg.Status)
	require.Equal(t, &contract.Origin{RetryOf: first.agg.WorkflowID, By: "cli", Reason: "input fixed"}, agg.Origin)
	require.Equal(t, contract.StatusReused, agg.Steps["fetch"].Status)
	require.Equal(t, contract.StatusCompleted, agg.Steps["transform"].Status)
	require.Equal(t, "published after fetched\n", agg.Steps["publish"].Result, "the reused step's result carried over")
	ran, err := os.ReadFile(filepath.Join(dir, "ran.log"))
	require.NoError(t, err)
	require.Equal(t, "fetch\n", string(ran), "fetch did not run again")
	replay(t, "retry_reuse.yaml", agg.WorkflowID, agg.RunID)

	code, out, errOut = cli(t, "retry", "--address", server.Address, "--json", "--step", "fetch", agg.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &agg))
	require.Equal(t, contract.StatusCompleted, agg.Steps["fetch"].Status, "--step fetch runs fetch again")
	ran, err = os.ReadFile(filepath.Join(dir, "ran.log"))
	require.NoError(t, err)
	require.Equal(t, "fetch\nfetch\n", string(ran))

	code, _, errOut = cli(t, "retry", "--address", server.Address, "--step", "nope", agg.WorkflowID)
	require.Equal(t, 2, code)
	require.Equal(t, "retry: no step \"nope\" to retry from in playbook retry-demo\n", errOut)
}
