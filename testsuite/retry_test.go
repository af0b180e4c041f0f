package testsuite

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
)

// retry after a run whose middle step failed: the new run completes, the
// first step is reused and did not run again (its side-effect file proves
// it); --step reruns a step and what follows it.
func TestRetryReusesCompletedSteps(t *testing.T) {
	parallel(t)
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
	require.Equal(t, &contract.Origin{RetryOf: first.agg.WorkflowID, By: osUser(), Reason: "input fixed"}, agg.Origin)
	require.Equal(t, contract.StatusReused, agg.Steps["fetch"].Status)
	require.Equal(t, contract.StatusCompleted, agg.Steps["transform"].Status)
	require.Equal(t, "published after fetched\n", agg.Steps["publish"].Result, "the reused step's result carried over")
	ran, err := os.ReadFile(filepath.Join(dir, "ran.log"))
	require.NoError(t, err)
	require.Equal(t, "fetch\n", string(ran), "fetch did not run again")
	replay(t, "retry_reuse.yaml", agg.WorkflowID, agg.RunID)

	code, out, errOut = cli(t, "retry", "--address", server.Address, "--json", "--step", "fetch", "--by", "ops", agg.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &agg))
	require.Equal(t, contract.StatusCompleted, agg.Steps["fetch"].Status, "--step, the other name of --from, runs fetch again")
	require.Equal(t, "ops", agg.Origin.By)
	ran, err = os.ReadFile(filepath.Join(dir, "ran.log"))
	require.NoError(t, err)
	require.Equal(t, "fetch\nfetch\n", string(ran))

	code, _, errOut = cli(t, "retry", "--address", server.Address, "--step", "nope", agg.WorkflowID)
	require.Equal(t, 2, code)
	require.Equal(t, "retry: no step \"nope\" to retry from in playbook retry-demo\n", errOut)
}

// Issue 41 (2): a step is judged by what it does, not by where it sits.
// extract's `next` routes by workload.min_rows; the runs mark DIR/marks.
const routed = `metadata: {name: routed}
workload: {dir: /tmp, min_rows: 5}
workflow:
  - step: extract
    tool: { kind: shell, command: 'echo extract >> "$D/marks"; echo 10', env: { D: "{{ workload.dir }}" } }
    next:
      - when: "steps.extract.result.json > workload.min_rows"
        then: transform
      - else: [small]
  - step: transform
    tool: { kind: shell, command: 'echo transform >> "$D/marks"; [ -e "$D/fixed" ]', env: { D: "{{ workload.dir }}" } }
  - step: small
    tool: { kind: shell, command: 'echo small >> "$D/marks"', env: { D: "{{ workload.dir }}" } }
`

func TestRetryReusesAStepWhoseRoutingChanged(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	file := writePlaybook(t, dir, "routed.yaml", routed)
	first := runPlaybookFile(t, file, "--set", "dir="+dir)
	require.Equal(t, []string{"transform"}, first.FailedSteps)

	// A check between extract and transform: extract's next changes.
	withCheck := strings.Replace(routed, "        then: transform\n", "        then: check_csv\n", 1)
	withCheck = strings.Replace(withCheck, "  - step: transform\n", "  - step: check_csv\n    tool: { kind: shell, command: 'echo check_csv >> \"$D/marks\"; touch \"$D/fixed\"', env: { D: \"{{ workload.dir }}\" } }\n    next: transform\n  - step: transform\n", 1)
	writePlaybook(t, dir, "routed.yaml", withCheck)
	code, agg, errOut := retryJSON(t, "--file", file, first.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "  extract    reused\n  check_csv  runs: not in the earlier run\n  transform  runs: failed before\n  small      not reused: skipped before; runs if a branch leads to it\n")
	require.Equal(t, "completed", agg.Status)
	require.Equal(t, contract.StatusReused, agg.Steps["extract"].Status)
	require.Equal(t, []string{"check_csv", "extract", "transform", "transform"}, marks(t, dir), "extract ran once in all")

	// A value only extract's next reads: extract is reused, and routes by it.
	code, agg, errOut = retryJSON(t, "--set", "min_rows=20", agg.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "  extract    reused\n  check_csv  not reused: no branch leads to it now\n  transform  not reused: no branch leads to it now\n  small      not reused: skipped before; runs if a branch leads to it\n")
	require.Equal(t, "completed", agg.Status)
	require.Equal(t, contract.StatusReused, agg.Steps["extract"].Status)
	require.Equal(t, []string{"small"}, agg.Steps["extract"].TakenNext)
	require.Equal(t, contract.StatusSkipped, agg.Steps["transform"].Status)
	require.Equal(t, []string{"check_csv", "extract", "small", "transform", "transform"}, marks(t, dir))
}

// Issue 41 (3): a file a step writes to never makes it run again; a
// script it runs does.
func TestRetryJudgesFilesByWhatRuns(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "scripts"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "scripts", "last.sh"), []byte("echo last >> \"$1/marks\"\n"), 0o755))
	file := writePlaybook(t, dir, "chain.yaml", strings.ReplaceAll(`metadata: {name: chain}
workflow:
  - step: first
    tool: { kind: shell, command: "echo first >> DIR/marks" }
    next: middle
  - step: middle
    tool: { kind: shell, command: "echo middle >> DIR/marks; test -e DIR/fixed" }
    next: last
  - step: last
    tool: { kind: shell, command: "bash scripts/last.sh DIR" }
`, "DIR", dir))
	first := runPlaybookFile(t, file)
	require.Equal(t, []string{"middle"}, first.FailedSteps)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fixed"), nil, 0o644))

	code, agg, errOut := retryJSON(t, first.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "  first   reused\n  middle  runs: failed before\n  last    runs: upstream middle runs again\n")
	require.Equal(t, "completed", agg.Status)
	require.Equal(t, []string{"first", "last", "middle", "middle"}, marks(t, dir), "first ran once in all")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "scripts", "last.sh"), []byte("echo last again >> \"$1/marks\"\n"), 0o755))
	code, out, errOut := cli(t, "retry", "--address", server.Address, "--dry-run", agg.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "  first   reused\n  middle  reused\n  last    runs: scripts/last.sh changed\n")
}

// A file a step declares it reads (`reads`) is judged as a script it
// runs: unchanged, the step is reused; changed, it runs again and the plan
// names the file.
func TestRetryRunsAStepWhoseReadFileChanged(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "data"), 0o755))
	ref := filepath.Join(dir, "data", "ref.csv")
	require.NoError(t, os.WriteFile(ref, []byte("id,rate\n1,0.5\n"), 0o644))
	file := writePlaybook(t, dir, "lookup.yaml", strings.ReplaceAll(`metadata: {name: lookup}
workflow:
  - step: lookup
    reads: [data/ref.csv]
    tool: { kind: shell, command: "echo lookup >> DIR/marks; cat DIR/data/ref.csv" }
    next: load
  - step: load
    tool: { kind: shell, command: "echo load >> DIR/marks; test -e DIR/fixed" }
`, "DIR", dir))
	first := runPlaybookFile(t, file)
	require.Equal(t, []string{"load"}, first.FailedSteps)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fixed"), nil, 0o644))

	code, out, errOut := cli(t, "retry", "--address", server.Address, "--dry-run", first.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "  lookup  reused\n  load    runs: failed before\n")

	require.NoError(t, os.WriteFile(ref, []byte("id,rate\n1,0.7\n"), 0o644))
	code, agg, errOut := retryJSON(t, first.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "  lookup  runs: data/ref.csv changed\n  load    runs: ")
	require.Equal(t, "completed", agg.Status)
	require.Equal(t, []string{"load", "load", "lookup", "lookup"}, marks(t, dir), "lookup ran again")
	require.Contains(t, agg.Steps["lookup"].Result.(map[string]any)["stdout"], "1,0.7")
	replay(t, "", agg.WorkflowID, agg.RunID)
}
