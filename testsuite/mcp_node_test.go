package testsuite

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"playbook"

	"github.com/stretchr/testify/require"
)

// startMCPHTTP starts `playbook mcp --http` on a free port and returns its URL
// once it listens.
func startMCPHTTP(t *testing.T, extra ...string) string {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	args := append([]string{"mcp", "--http", addr, "--address", server.Address, "--log-dir", logDir}, extra...)
	cmd := exec.Command(playbookBinary(t), args...)
	notes, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(notes)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "MCP server on http://") {
				ready <- true
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		t.Fatal("playbook mcp --http did not start listening")
	}
	return "http://" + addr + "/"
}

// A web page in the user's browser must not drive the server: a request
// with a foreign Origin is refused before it reaches MCP; one from the
// server's own origin, or with no Origin (not a browser), gets through.
func TestMCPHTTPRefusesCrossOrigin(t *testing.T) {
	parallel(t)
	url := startMCPHTTP(t, "--allow-write")
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	post := func(origin string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(initialize))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var b strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() && b.Len() < 4096 {
			b.WriteString(sc.Text() + "\n")
			if strings.Contains(b.String(), "serverInfo") {
				break
			}
		}
		return resp.StatusCode, b.String()
	}
	code, body := post("https://evil.example")
	require.Equal(t, http.StatusForbidden, code, body)
	require.Contains(t, body, `origin "https://evil.example" may not call this MCP server`)
	code, body = post("http://localhost:1234")
	require.Equal(t, http.StatusForbidden, code, "another local origin is another site: %s", body)
	code, body = post("")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"name":"playbook"`)
	code, body = post(strings.TrimSuffix(url, "/"))
	require.Equal(t, http.StatusOK, code, body)
}

// The same flow as TestMCPClassifiesPendingFailedStep, from a client no one
// here wrote: the official TypeScript SDK from npm, over streamable HTTP.
// It reaches the npm registry: PLAYBOOK_TEST_NPM=1 (as .ci/run sets).
func TestMCPNodeClient(t *testing.T) {
	parallel(t)
	needNPM(t)
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		t.Skip("node and npm are needed to run the TypeScript MCP SDK's client; not found on PATH")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "@modelcontextprotocol/sdk@^1")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Skipf("cannot install @modelcontextprotocol/sdk from the npm registry (offline?): %v\n%s", err, out)
	}
	src, err := os.ReadFile("testdata/mcp_client.mjs")
	require.NoError(t, err)
	script := filepath.Join(dir, "mcp_client.mjs")
	require.NoError(t, os.WriteFile(script, src, 0o644))

	url := startMCPHTTP(t, "--allow-write")
	ready := filepath.Join(t.TempDir(), "ready")
	run := start(t, "../playbooks/pending_failed.yaml", "playbook", map[string]any{"ready_file": ready})
	waitFor(t, "check to be pending_failed", func() bool { return len(pendingSteps(t, run)) == 1 })
	require.NoError(t, os.WriteFile(ready, nil, 0o644))

	const reason = "ready file created by the operator"
	cmd := exec.CommandContext(ctx, node, script, url, run.GetID(), reason)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node client: %s", out)
	var got struct {
		Tools        []string `json:"tools"`
		Step         string   `json:"step"`
		StderrTail   string   `json:"stderr_tail"`
		Classified   string   `json:"classified"`
		Status       string   `json:"status"`
		Note         string   `json:"note"`
		Prompt       string   `json:"prompt"`
		ReadmeStarts string   `json:"readme_starts"`
		LangStarts   string   `json:"language_starts"`
	}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	require.Equal(t, []string{"approve_step", "cancel_run", "classify_step", "list_files", "list_pending_failed", "list_runs", "reject_step", "retry_run", "run_status", "send_event", "step_logs", "test_playbook", "validate_playbook"}, got.Tools)
	require.Equal(t, "check", got.Step)
	require.Equal(t, "input not ready: "+ready+"\n", got.StderrTail)
	require.Equal(t, "step check classified retry: now pending", got.Classified)
	require.Equal(t, "completed", got.Status)
	require.Equal(t, "retry by mcp: "+reason, got.Note)
	require.Contains(t, got.Prompt, run.GetID())
	require.Equal(t, "# playbook\n\nA durabl", got.ReadmeStarts, "the README resource")
	require.Equal(t, playbook.Language[:30], got.LangStarts, "the language reference resource")
	require.Equal(t, "completed", finish(t, run).Status)
}

// needNPM skips a test that installs packages from the npm registry unless
// PLAYBOOK_TEST_NPM=1 asks for it: `make test` then needs no network but
// the Go module proxy, and .ci/run, which reaches npm, runs them.
func needNPM(t *testing.T) {
	t.Helper()
	if os.Getenv("PLAYBOOK_TEST_NPM") != "1" {
		t.Skip("reaches the npm registry: set PLAYBOOK_TEST_NPM=1 to run it")
	}
}
