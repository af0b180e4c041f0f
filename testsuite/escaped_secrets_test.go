package testsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
)

// Acceptance (#39, 3): a secret holding ", \, é and a tab, printed by
// Python's json.dumps (ensure_ascii on and off), by printf, percent-encoded
// and in base64, appears in none of its forms in the run's result, its
// history (as the Web UI's history API serves it, payloads decoded),
// `status --json`, MCP's run_status, or the attempt's logs.
func TestEscapedSecretsAreRedacted(t *testing.T) {
	parallel(t)
	bin := playbookBinary(t)
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets")
	logs := filepath.Join(dir, "logs")
	require.NoError(t, os.MkdirAll(secrets, 0o700))
	secret := fmt.Sprintf("p\"w\\é\tx-%d", time.Now().UnixNano())
	require.NoError(t, os.WriteFile(filepath.Join(secrets, "api_token"), []byte(secret+"\n"), 0o600))

	port, uiPort := devPorts(t)
	dev, _ := launchDevWith(t, bin, filepath.Join(dir, "dev.db"), &port, &uiPort, []string{"PLAYBOOK_LOG_DIR=" + logs}, "--secrets-dir", secrets)
	t.Cleanup(func() { _ = dev.Process.Kill(); _ = dev.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)

	file := writePlaybook(t, dir, "escaped.yaml", `metadata: {name: escaped}
failure_mode: continue
workflow:
  - step: print
    tool:
      kind: shell
      command: |
        python3 -c 'import json, os, sys, base64, urllib.parse
        t = os.environ["TOKEN"]
        print(json.dumps({"token": t}))
        print(json.dumps({"token": t}, ensure_ascii=False))
        print("q=" + urllib.parse.quote_plus(t), "b64=" + base64.b64encode(t.encode()).decode())'
        printf 'raw=%s\n' "$TOKEN"
      env: {TOKEN: {secret: api_token}}
  - step: fail
    tool:
      kind: shell
      command: |
        python3 -c 'import json, os; print(json.dumps({"error": os.environ["TOKEN"]}))' >&2
        printf 'raw=%s\n' "$TOKEN" >&2
        exit 3
      env: {TOKEN: {secret: api_token}}
`)
	code, out, errOut := cli(t, "run", "--address", addr, "--json", file)
	require.Equal(t, 1, code, errOut)
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &agg), errOut)
	stdout := agg.Steps["print"].Result.(map[string]any)["stdout"].(string)
	require.Equal(t, "{\"token\": \"***\"}\n{\"token\": \"***\"}\nq=*** b64=***\nraw=***\n", stdout, "each form the step printed is hidden")

	noForm := func(where, text string) {
		t.Helper()
		for _, form := range contract.SecretForms(secret) {
			require.NotContains(t, text, form, "%s holds the secret as %q", where, form)
		}
	}
	noForm("the run's output", out+errOut)
	code, status, errOut := cli(t, "status", "--address", addr, "--json", agg.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, status, "***")
	noForm("status --json", status)

	noForm("the Web UI's history API", uiHistory(t, uiPort, agg.WorkflowID))

	s := mcpSessionOn(t, bin, addr, logs)
	text, isErr := callTool(t, s, "run_status", map[string]any{"run": agg.WorkflowID})
	require.False(t, isErr, text)
	require.Contains(t, text, "***")
	noForm("MCP's run_status", text)

	require.NoError(t, filepath.WalkDir(logs, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		noForm(path, string(b))
		return nil
	}))
}

// uiHistory is a run's history as the Web UI's HTTP API serves it, with
// every payload's data decoded (payloadsDecoded).
func uiHistory(t *testing.T, uiPort int, id string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("http://127.0.0.1:%d/api/v1/namespaces/default/workflows/%s/history", uiPort, id), nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode, string(b))
	require.Contains(t, string(b), "workflowExecutionFailedEventAttributes", "the whole history, to its end")
	return payloadsDecoded(t, string(b))
}

// mcpSessionOn starts the real `playbook mcp` on the server at addr.
func mcpSessionOn(t *testing.T, bin, addr, logs string, extra ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"mcp", "--address", addr, "--log-dir", logs}, extra...)...)
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "playbook-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}
