package testsuite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
)

// A malformed playbook exits 2 with one line naming file, line and step,
// and starts nothing.
func TestInvalidPlaybookStartsNothing(t *testing.T) {
	parallel(t)
	file := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`metadata: {name: bad}
workflow:
  - step: extract
    tool: {kind: noop}
    next: lod
  - step: load
`), 0o644))
	code, out, errOut := cli(t, "run", "--address", server.Address, "--id", "bad-never-started", file)
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.Equal(t, file+`:5: step "extract": next names unknown step "lod" (did you mean "load"?)`+"\n", errOut)
	_, err := tc.DescribeWorkflowExecution(context.Background(), "bad-never-started", "")
	var notFound *serviceerror.NotFound
	require.ErrorAs(t, err, &notFound, "nothing was started")

	code, _, errOut = cli(t, "validate", file, "../playbooks/hello.yaml")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `bad.yaml:5: step "extract"`)

	code, _, errOut = cli(t, "run", "--address", server.Address, "--set", "novalue", "../playbooks/hello.yaml")
	require.Equal(t, 2, code)
	require.Equal(t, "run: --set \"novalue\": write KEY=VALUE\n", errOut)

	null := filepath.Join(t.TempDir(), "null.json")
	require.NoError(t, os.WriteFile(null, []byte("null\n"), 0o600))
	code, _, errOut = cli(t, "run", "--address", server.Address, "--input", null, "--set", "who=x", "../playbooks/hello.yaml")
	require.Equal(t, 2, code)
	require.Equal(t, "run: --input "+null+": not a JSON object: it holds null\n", errOut)
	code, _, errOut = cli(t, "run", "--address", server.Address, "--set", "who=1", "--set", "who.x=y", "../playbooks/hello.yaml")
	require.Equal(t, 2, code)
	require.Equal(t, "run: --set who.x=y: who is already set to a value that is not a mapping\n", errOut)

	// Overrides that would be read wrong are refused, one line each, exit
	// 2, and nothing starts.
	dir := t.TempDir()
	twice := filepath.Join(dir, "twice.json")
	require.NoError(t, os.WriteFile(twice, []byte(`{"who": "a", "who": "b"}`), 0o600))
	list := filepath.Join(dir, "list.json")
	require.NoError(t, os.WriteFile(list, []byte(`["a"]`), 0o600))
	free := writePlaybook(t, dir, "free.yaml", "metadata: {name: free}\nworkload: {free: null, tags: []}\nworkflow:\n  - {step: a, tool: {kind: noop}}\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "db..host=x", "../playbooks/hello.yaml"}, `run: --set "db..host=x": the key "db..host" has an empty part: write KEY=VALUE or KEY.SUBKEY=VALUE`},
		{[]string{"--input", twice, "../playbooks/hello.yaml"}, "run: --input " + twice + ": key who is given twice: give it once"},
		{[]string{"--input", list, "../playbooks/hello.yaml"}, "run: --input " + list + ": not a JSON object: it holds an array"},
		{[]string{"--set", "free=.nan", free}, "run: " + free + ": workload.free must be a finite number, not .nan"},
	} {
		code, out, errOut := cli(t, append([]string{"run", "--address", server.Address}, c.args...)...)
		require.Equal(t, 2, code, c.args)
		require.Empty(t, out, c.args)
		require.Equal(t, c.want+"\n", errOut, c.args)
	}
	code, _, errOut = cli(t, "run", "--address", server.Address, "--set", "tags=[a, b", free)
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `workload.tags: "[a, b" is not a value YAML can read (`)

	code, _, errOut = cli(t, "run", "--address", server.Address, "missing.yaml")
	require.Equal(t, 2, code)
	require.Equal(t, "missing.yaml: cannot read: no such file or directory\n", errOut)
}

func TestValidateExamples(t *testing.T) {
	parallel(t)
	files := examplePlaybooks(t)
	code, out, errOut := cli(t, append([]string{"validate"}, files...)...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, len(files), strings.Count(out, ": ok ("))
}

// Without --json, run prints each transition as it happens, then a table.
func TestRunPrintsProgressAndSummary(t *testing.T) {
	parallel(t)
	code, out, _ := cli(t, "run", "--address", server.Address, "--id", "progress-1", "../playbooks/failure_cleanup.yaml")
	require.Equal(t, 1, code)
	for _, want := range []string{
		"Started progress-1",
		"transform      started",
		"transform      failed: exit_code: exited with code 3: disk full (routed to end)",
		"report         skipped: upstream transform failed",
		"cleanup        completed",
		"end            1 of 5 steps failed; run failed",
		"STEP       STATUS     ATTEMPTS  NOTE",
		"transform  failed     1         exit_code: exited with code 3: disk full (routed to end)",
		"Run progress-1 failed: 1 of 5 steps failed (transform).",
	} {
		require.Contains(t, out, want)
	}
}

// Submitting to a task queue no worker polls says so instead of waiting in
// silence.
func TestRunWarnsWithoutWorker(t *testing.T) {
	parallel(t)
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, _, errOut := cli(t, "run", "--address", server.Address, "--task-queue", "nobody-polls", "--id", "no-worker-1", "../playbooks/hello.yaml")
		done <- result{code, errOut}
	}()
	waitFor(t, "the run to start", func() bool {
		_, err := tc.DescribeWorkflowExecution(context.Background(), "no-worker-1", "")
		return err == nil
	})
	require.NoError(t, tc.CancelWorkflow(context.Background(), "no-worker-1", ""))
	require.NoError(t, tc.TerminateWorkflow(context.Background(), "no-worker-1", "", "no worker will come"))
	r := <-done
	require.Contains(t, r.stderr, `No worker is polling task queue "nobody-polls": the run waits until one does (start one with `+"`playbook worker`"+`).`)
}

// The same binary reaches any cluster through envconfig: TEMPORAL_ADDRESS,
// or a profile in the Temporal config file.
func TestConnectionFromEnvconfig(t *testing.T) {
	// Serial: t.Setenv (envconfig) (see parallel).
	t.Setenv("TEMPORAL_CONFIG_FILE", filepath.Join(t.TempDir(), "none.toml"))
	t.Setenv("TEMPORAL_ADDRESS", server.Address)
	code, out, errOut := cli(t, "run", "../playbooks/hello.yaml")
	require.Equal(t, 0, code, errOut)
	require.NotContains(t, errOut, "embedded", "TEMPORAL_ADDRESS names the server")
	require.Contains(t, out, "completed: 0 of 3 steps failed.")

	config := filepath.Join(t.TempDir(), "temporal.toml")
	require.NoError(t, os.WriteFile(config, []byte("[profile.staging]\naddress = \""+server.Address+"\"\nnamespace = \"default\"\n"), 0o644))
	require.NoError(t, os.Unsetenv("TEMPORAL_ADDRESS")) // t.Setenv above restores it after the test
	t.Setenv("TEMPORAL_CONFIG_FILE", config)
	code, out, errOut = cli(t, "run", "--profile", "staging", "../playbooks/hello.yaml")
	require.Equal(t, 0, code, errOut)
	require.NotContains(t, errOut, "embedded", "the profile names the server")
	require.Contains(t, out, "completed: 0 of 3 steps failed.")
}

func TestEventsFollow(t *testing.T) {
	parallel(t, carries("playbook-long-running"))
	run := start(t, "../playbooks/long_running.yaml", "playbook", map[string]any{"seconds": 1})
	code, out, errOut := cli(t, "events", "--address", server.Address, "--follow", run.GetID())
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "step_started         left")
	require.Contains(t, out, "step_completed       after", "it followed the run to its end")
	require.True(t, strings.HasSuffix(strings.TrimSpace(out), "workflow_completed"), out)
}
