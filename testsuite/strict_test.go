package testsuite

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"playbook/internal/quietlog"
	"playbook/interpreter/contract"
	"playbook/submit"
	"playbook/worker"
)

// `validate` reports every error of a file at once, one line each, in file
// order, and exits 2.
func TestValidateReportsEveryError(t *testing.T) {
	parallel(t)
	file := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`metadata: {name: bad}
workload: {rows: 3}
workflow:
  - step: extract
    tool: {kind: shell, command: 'mkdir -p "$WORKDIR"', env: {WORKDIR: "{{ workload.work_dir }}"}}
    next:
      - when: 'workload.rows > "zero"'
        then: [load]
  - step: load
  - step: audit
    tool: {kind: noop, result: "{{ steps.extract.result }}"}
`), 0o644))
	code, out, errOut := cli(t, "validate", file)
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.Equal(t, file+`:5: step "extract": tool: "workload.work_dir": reads workload.work_dir, which the workload section does not declare (declared: rows)
`+file+`:7: step "extract": when: "workload.rows > \"zero\"": invalid operation: > (mismatched types int and string) (1:15)
`+file+`:11: step "audit": tool: "steps.extract.result": reads steps.extract, but step "extract" is not upstream of "audit" (it would read null): make it a predecessor through next or depends_on
`, errOut)
}

// --set may only set declared keys, and converts to the declared type;
// nothing starts otherwise.
func TestRunChecksOverrides(t *testing.T) {
	parallel(t)
	code, out, errOut := cli(t, "run", "--address", server.Address, "--set", "nosuch=1", "../playbooks/hello.yaml")
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.Equal(t, `run: ../playbooks/hello.yaml: workload key "nosuch" is not declared (declared: who)`+"\n", errOut)

	code, _, errOut = cli(t, "run", "--address", server.Address, "--set", "rows=many", "../playbooks/branching.yaml")
	require.Equal(t, 2, code)
	require.Equal(t, `run: ../playbooks/branching.yaml: workload.rows must be a whole number (its default is 5), not "many"`+"\n", errOut)

	// 3.0 from JSON is a whole number: the run starts.
	input := filepath.Join(t.TempDir(), "in.json")
	require.NoError(t, os.WriteFile(input, []byte(`{"rows": 3.0}`), 0o644))
	r := runExample(t, "branching.yaml", "--input", input)
	require.Equal(t, contract.RunCompleted, r.agg.Status)
	require.Equal(t, "loaded 3 rows", r.agg.Steps["load"].Result)
}

func TestListRefusesAnUnknownStatus(t *testing.T) {
	parallel(t)
	code, _, errOut := cli(t, "list", "--address", server.Address, "--status", "bogus")
	require.Equal(t, 2, code)
	require.Equal(t, `list: --status "bogus" is not a run status (running, waiting, queued, completed, completed_with_warnings, failed, cancelled, terminated, timed_out)`+"\n", errOut)
}

// undeclaredReads is a playbook the submission checks reject (it reads an
// undeclared workload key and a step that is not upstream) but that the
// workflow, which re-parses frozen playbooks leniently, still runs.
const undeclaredReads = `metadata: {name: undeclared-reads}
workflow:
  - step: first
    tool: {kind: noop, result: "{{ workload.dir }}"}
  - step: second
    tool: {kind: noop, result: "{{ steps.first.status }}"}
`

// A run whose playbook today's checks would reject keeps replaying: the
// checks run at submission only (docs/VERSIONING.md). The run is started
// through the Go client, as a playbook submitted before the checks was;
// testdata/histories/undeclared_reads.json is such a run, recorded.
func TestRejectedPlaybookStillReplays(t *testing.T) {
	parallel(t)
	_, strictErr := submit.ParseStrict("undeclared.yaml", []byte(undeclaredReads), "")
	require.EqualError(t, strictErr, `undeclared.yaml:4: step "first": tool: "workload.dir": reads workload.dir, which the workload section does not declare (it declares no keys)
undeclared.yaml:6: step "second": tool: "steps.first.status": reads steps.first, but step "first" is not upstream of "second" (it would read null): make it a predecessor through next or depends_on`)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in := contract.Input{File: "undeclared.yaml", Source: undeclaredReads, Workload: map[string]any{"dir": "/tmp/x"}}
	wr, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "undeclared-reads-" + strings.ReplaceAll(t.Name(), "/", "-") + time.Now().Format("150405.000"), TaskQueue: contract.TaskQueue}, contract.WorkflowName, in)
	require.NoError(t, err)
	var agg contract.Aggregate
	require.NoError(t, wr.Get(ctx, &agg))
	require.Equal(t, contract.RunCompleted, agg.Status)
	require.Equal(t, "/tmp/x", agg.Steps["first"].Result)
	replay(t, "undeclared_reads", wr.GetID(), wr.GetRunID())

	// retry is a submission: it applies the checks to the frozen playbook.
	code, _, errOut := cli(t, "retry", "--address", server.Address, wr.GetID())
	require.Equal(t, 2, code)
	require.Equal(t, "retry: "+strictErr.Error()+"\n", errOut)

	h := readHistory(t, filepath.Join("testdata", "histories", "v1", "undeclared_reads.json"))
	var recorded contract.Input
	require.NoError(t, json.Unmarshal(h.Events[0].GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()[0].GetData(), &recorded))
	_, err = submit.ParseStrict(recorded.File, []byte(recorded.Source), "")
	require.Error(t, err, "the recorded run's playbook is one the checks reject")
	require.NoError(t, worker.Replay(h, quietlog.New()))
}
