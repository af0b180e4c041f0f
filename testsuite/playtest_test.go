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

const recordedPlaybook = `metadata: { name: recorded }
failure_mode: continue
failure_handlers:
  - name: remount
    rules:
      - exit_codes: [75]
        max_retries: 1
        recovery_script: ./remount.sh
workflow:
  - step: mount
    tool: { kind: shell, command: 'if [ "$PLAYBOOK_ATTEMPT" = 1 ]; then echo stale >&2; exit 75; fi; echo mounted' }
    failure_handler: remount
    next: transform
  - step: transform
    tool: { kind: shell, command: 'echo "disk full" >&2; exit 3' }
    retry: { max_attempts: 2, initial_delay: 100ms }
    next: report
  - step: report
    tool: { kind: noop, result: done }
  - step: cleanup
    depends_on: [transform]
    on_failure: run
    tool: { kind: shell, command: "echo cleaned" }
`

// --record of a real failed run gives a test file that passes as
// recorded, and fails, naming the mismatch, once the playbook's failure
// handling changes.
func TestRecordARealFailedRun(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	pb := filepath.Join(dir, "recorded.yaml")
	require.NoError(t, os.WriteFile(pb, []byte(recordedPlaybook), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "remount.sh"), []byte("#!/bin/sh\necho remounted\n"), 0o755))
	code, out, errOut := cli(t, "run", "--address", server.Address, "--json", "--id", "recorded-1", pb)
	require.Equal(t, 1, code, errOut)
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &agg))
	require.Equal(t, contract.StatusCompleted, agg.Steps["mount"].Status)
	require.Equal(t, 2, agg.Steps["mount"].Attempts)

	testFile := filepath.Join(dir, "recorded.test.yaml")
	code, _, errOut = cli(t, "test", "--address", server.Address, "--record", "recorded-1", "-o", testFile)
	require.Equal(t, 0, code, errOut)
	text, err := os.ReadFile(testFile)
	require.NoError(t, err)
	require.Contains(t, string(text), "playbook: \"recorded.yaml\"")
	require.Contains(t, string(text), "mount: { attempts: [{ error: { exit_code: 75, stderr: \"stale\\n\" }, recovery_exit_code: 0 }")
	require.Contains(t, string(text), "    history: \"recorded.recorded-1.history.json\"\n", "the run's history is kept beside the case")
	history := filepath.Join(dir, "recorded.recorded-1.history.json")
	require.FileExists(t, history)

	code, out, errOut = cli(t, "test", testFile)
	require.Equal(t, 0, code, "the recorded case passes as recorded:\n%s%s\n%s", out, errOut, text)
	require.Contains(t, out, "1 passed, 0 failed")
	t.Logf("%s", text)

	// The case replays the history: one the workflow no longer issues fails it.
	recorded, err := os.ReadFile(history)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(history, []byte(strings.Replace(string(recorded), `"RunStep"`, `"Renamed"`, 1)), 0o644))
	code, out, _ = cli(t, "test", testFile)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "history recorded.recorded-1.history.json: the recorded run no longer replays through this build")
	require.NoError(t, os.WriteFile(history, recorded, 0o644))

	for _, c := range []struct{ old, new, want string }{
		{"    on_failure: run\n", "", `step "cleanup": expected status completed, got skipped`},
		{"max_attempts: 2", "max_attempts: 3", `step "transform": expected attempts 2, got 3`},
		{"exit_codes: [75]", "exit_codes: [76]", `step "mount": expected status completed, got failed`},
	} {
		require.NoError(t, os.WriteFile(pb, []byte(strings.Replace(recordedPlaybook, c.old, c.new, 1)), 0o644))
		code, out, _ = cli(t, "test", testFile)
		require.Equal(t, 1, code, "changed %q: %s", c.old, out)
		require.Contains(t, out, c.want)
	}
}

// The MCP tool test_playbook runs test files under the server's root and
// starts nothing: a step listed under real: fails its case unrun.
func TestMCPTestPlaybook(t *testing.T) {
	parallel(t)
	s := mcpSession(t, "--root", "..")
	text, isErr := callTool(t, s, "test_playbook", map[string]any{"path": "playbooks/flaky.test.yaml"})
	require.False(t, isErr, text)
	require.Contains(t, text, `"passed": 2,`)
	require.Contains(t, text, `"failed": 0`)

	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.yaml"), []byte("metadata: { name: p }\nworkflow:\n  - step: load\n    tool: { kind: shell, command: 'touch "+marker+"' }\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.test.yaml"), []byte("cases:\n  - name: real\n    real: [load]\n    expect: { status: completed }\n"), 0o644))
	w := mcpSession(t, "--root", dir)
	text, isErr = callTool(t, w, "test_playbook", map[string]any{"path": "p.test.yaml"})
	require.False(t, isErr, text)
	require.Contains(t, text, `step \"load\" would run a shell command: real: is off here, mock it`)
	require.NoFileExists(t, marker)
	text, isErr = callTool(t, w, "test_playbook", map[string]any{"path": "../elsewhere.test.yaml"})
	require.True(t, isErr, text)
	require.Contains(t, text, "outside the directory this MCP server reads")

	// A test file under the root naming a playbook outside it: refused the
	// same whether that playbook is there or not.
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "there.yaml"), []byte("metadata: { name: there }\nworkflow: [{step: a, tool: {kind: noop}}]\n"), 0o644))
	var said []string
	for _, name := range []string{"there.yaml", "gone.yaml"} {
		pb := filepath.Join(outside, name)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "o.test.yaml"), []byte("playbook: "+pb+"\ncases:\n  - name: c\n    expect: { status: completed }\n"), 0o644))
		text, isErr = callTool(t, w, "test_playbook", map[string]any{"path": "o.test.yaml"})
		require.False(t, isErr, text)
		said = append(said, strings.ReplaceAll(text, name, "NAME"))
		require.Contains(t, text, "outside "+dir+", the directory these tests may read", name)
	}
	require.Equal(t, said[0], said[1], "the same answer whether the playbook is there or not")
}

// examplePlaybooks are the playbooks under playbooks/ (not their test
// files, NAME.test.yaml).
func examplePlaybooks(t *testing.T) []string {
	files, err := filepath.Glob("../playbooks/*.yaml")
	require.NoError(t, err)
	var out []string
	for _, f := range files {
		if !strings.HasSuffix(f, ".test.yaml") {
			out = append(out, f)
		}
	}
	return out
}
