package testsuite

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
)

// The whole example (playbooks/nightly_etl, docs/LANGUAGE.md) runs: a retry_when
// retry, an exit-code rule with its recovery script, a branch taking two
// targets in parallel, an http step, a sub-playbook, an on_failure: run
// cleanup over a depends_on join, and end's success_when.
func TestContractExample(t *testing.T) {
	parallel(t)
	var mu sync.Mutex
	got := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got[r.URL.Path] = string(b)
		mu.Unlock()
	}))
	defer srv.Close()
	workdir := filepath.Join(t.TempDir(), "batch")
	r := runExample(t, "nightly_etl/nightly_etl.yaml",
		"--set", "audit_url="+srv.URL+"/audit", "--set", "webhook="+srv.URL+"/hook", "--set", "workdir="+workdir)
	agg := r.agg
	require.Equal(t, "completed", agg.Status, "%+v", agg.FailedSteps)
	require.Equal(t, 5, agg.TotalSteps)

	extract := agg.Steps["extract"]
	require.Equal(t, 2, extract.Attempts, "exit 75 is retried by retry_when")
	require.Equal(t, "exit_code", extract.AttemptErrors[0].Error.Type)

	transform := agg.Steps["transform"]
	require.Equal(t, 2, transform.Attempts, "exit 10 is retried by the flaky_io rule")
	require.Equal(t, contract.RecoveryRetried, transform.AttemptErrors[0].Recovery)
	require.Equal(t, 0, *transform.AttemptErrors[0].RecoveryExitCode, "the recovery script, with the step's env, remounted")

	require.Equal(t, contract.StatusCompleted, agg.Steps["audit"].Status)
	var audited map[string]any
	require.NoError(t, json.Unmarshal([]byte(got["/audit"]), &audited))
	require.Equal(t, 3.0, audited["rows"], "the audit got extract's result as its body")

	load := agg.Steps["load"].Result.(map[string]any)
	inserted := load["steps"].(map[string]any)["insert"].(map[string]any)["result"].(map[string]any)["json"]
	require.Equal(t, map[string]any{"inserted": 3.0}, inserted, "the sub-playbook got transform's row count")

	require.Equal(t, contract.StatusCompleted, agg.Steps["cleanup"].Status)
	_, err := os.Stat(workdir)
	require.True(t, os.IsNotExist(err), "cleanup removed the batch directory")
	require.NotContains(t, got, "/hook", "on_failure only")
}
