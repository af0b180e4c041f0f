package commands

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const features = "../../../internal/playtest/testdata/features"

// writeTestCase writes a playbook and its test file to a fresh directory.
func writeTestCase(t *testing.T, tests string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.yaml"), []byte("metadata: { name: p }\nworkflow:\n  - step: load\n    tool: { kind: shell, command: 'exit 1' }\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.test.yaml"), []byte(tests), 0o644))
	return dir
}

// playbook test exits 0 when every case passes, 1 when one fails (saying
// why, with the steps' table), 2 for a malformed test file.
func TestTestCommandExitCodes(t *testing.T) {
	code, out, errOut := cli(t, "test", features+"/retry.yaml")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `^ok    \.\./\.\./\.\./internal/playtest/testdata/features/retry\.test\.yaml: case "503, 503, then 200" \(.*\)\n`, out)
	require.True(t, strings.HasSuffix(out, "2 passed, 0 failed\n"), out)

	dir := writeTestCase(t, `cases:
  - name: expects a success
    mocks: { load: { error: { exit_code: 1, stderr: boom } } }
    expect: { status: completed }
  - name: expects the failure
    mocks: { load: { error: { exit_code: 1 } } }
    expect: { status: failed }
`)
	code, out, _ = cli(t, "test", dir)
	require.Equal(t, 1, code)
	require.Contains(t, out, "FAIL  "+dir+"/p.test.yaml:2: case \"expects a success\"\n"+
		"      run status: expected completed, got failed\n"+
		"      STEP  STATUS     ATTEMPTS  DETAIL\n"+
		"      load  failed     1         exit_code: exited with code 1: boom (routed to end)\n"+
		"      end   completed  0\n")
	require.True(t, strings.HasSuffix(out, "1 passed, 1 failed\n"), out)

	code, out, _ = cli(t, "test", "--run", "the failure", dir)
	require.Equal(t, 0, code)
	require.True(t, strings.HasSuffix(out, "1 passed, 0 failed\n"), out)

	code, out, _ = cli(t, "test", "-v", "--run", "the failure", dir)
	require.Equal(t, 0, code)
	require.Contains(t, out, "      | load attempt 1: fails with exit_code: exited with code 1 (mocked)\n")

	bad := writeTestCase(t, "cases:\n  - name: x\n    mocks: { nosuch: { result: 1 } }\n    expect: { status: fine }\n")
	code, out, errOut = cli(t, "test", bad)
	require.Equal(t, 2, code)
	require.Empty(t, out, "no case ran")
	require.Equal(t, bad+"/p.test.yaml:3: case \"x\": mocks: p has no step \"nosuch\"\n"+
		bad+"/p.test.yaml:4: case \"x\": status \"fine\" is not a run status (completed, completed_with_warnings, failed, cancelled)\n", errOut)
}

// --json prints the report for tools; --junit writes JUnit XML.
func TestTestCommandReports(t *testing.T) {
	junit := filepath.Join(t.TempDir(), "report.xml")
	code, out, errOut := cli(t, "test", "--json", "--junit", junit, features+"/lost.test.yaml")
	require.Equal(t, 0, code, errOut)
	var rep struct {
		Passed  int `json:"passed"`
		Results []struct {
			Case   string `json:"case"`
			Passed bool   `json:"passed"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, 1, rep.Passed)
	require.Equal(t, "a lost attempt is retried", rep.Results[0].Case)
	b, err := os.ReadFile(junit)
	require.NoError(t, err)
	require.Contains(t, string(b), `<testsuites tests="1" failures="0">`)
	require.Contains(t, string(b), `<testcase name="a lost attempt is retried" classname="../../../internal/playtest/testdata/features/lost.test.yaml"`)
}
