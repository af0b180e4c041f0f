package testsuite

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
)

// mcpSession starts the real `playbook mcp` binary on the shared server and
// connects the SDK's own client to it over stdio.
func mcpSession(t *testing.T, extra ...string) *mcp.ClientSession {
	t.Helper()
	args := append([]string{"mcp", "--address", server.Address, "--log-dir", logDir}, extra...)
	cmd := exec.Command(playbookBinary(t), args...)
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "playbook-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// callTool calls a tool and returns its text and whether it is a tool error.
func callTool(t *testing.T, s *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, "a tool's failure is a tool error, not a protocol error")
	require.Len(t, res.Content, 1)
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

func TestMCPClassifiesPendingFailedStep(t *testing.T) {
	parallel(t)
	s := mcpSession(t, "--allow-write")
	tools, err := s.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		require.NotNil(t, tool.InputSchema, tool.Name)
	}
	sort.Strings(names)
	require.Equal(t, []string{"approve_step", "cancel_run", "classify_step", "list_files", "list_pending_failed", "list_runs", "reject_step", "retry_run", "run_status", "send_event", "step_logs", "test_playbook", "validate_playbook"}, names)

	ready := filepath.Join(t.TempDir(), "ready")
	run := start(t, "../playbooks/pending_failed.yaml", "playbook", map[string]any{"ready_file": ready})
	waitFor(t, "check to be pending_failed", func() bool { return len(pendingSteps(t, run)) == 1 })

	text, isErr := callTool(t, s, "list_pending_failed", map[string]any{"run": run.GetID()})
	require.False(t, isErr, text)
	var pending struct {
		PendingFailed []struct {
			Step       string `json:"step"`
			Attempts   int    `json:"attempts"`
			ErrorType  string `json:"error_type"`
			ExitCode   int    `json:"exit_code"`
			StderrTail string `json:"stderr_tail"`
		} `json:"pending_failed"`
	}
	require.NoError(t, json.Unmarshal([]byte(text), &pending))
	require.Len(t, pending.PendingFailed, 1)
	p := pending.PendingFailed[0]
	require.Equal(t, "check", p.Step)
	require.Equal(t, "exit_code", p.ErrorType)
	require.Equal(t, 1, p.ExitCode)
	require.Equal(t, 1, p.Attempts)
	require.Equal(t, "input not ready: "+ready+"\n", p.StderrTail)

	text, isErr = callTool(t, s, "step_logs", map[string]any{"run": run.GetID(), "step": "check", "offset": 6, "limit": 5})
	require.False(t, isErr, text)
	var chunk struct {
		Text       string `json:"text"`
		NextOffset int64  `json:"next_offset"`
		More       bool   `json:"more"`
	}
	require.NoError(t, json.Unmarshal([]byte(text), &chunk))
	require.Equal(t, "not r", chunk.Text, "a bounded chunk from the offset")
	require.True(t, chunk.More)
	require.EqualValues(t, 11, chunk.NextOffset)

	require.NoError(t, os.WriteFile(ready, nil, 0o644))
	const reason = "the input file is in place now"
	text, isErr = callTool(t, s, "classify_step", map[string]any{"run": run.GetID(), "step": "check", "action": "retry", "reason": reason})
	require.False(t, isErr, text)
	require.Contains(t, text, "step check classified retry: now pending")

	agg := finish(t, run)
	require.Equal(t, "completed", agg.Status, "the classified step ran again and the run completed")
	require.Equal(t, 2, agg.Steps["check"].Attempts)
	require.Equal(t, "retry by mcp: "+reason, agg.Steps["check"].Classified)

	text, isErr = callTool(t, s, "run_status", map[string]any{"run": run.GetID()})
	require.False(t, isErr, text)
	// run_status has the aggregate's own shape (as `run --json` and
	// `status --json`), with live retry state beside it.
	var st contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(text), &st))
	require.Equal(t, "completed", st.Status)
	require.Equal(t, "retry by mcp: "+reason, st.Steps["check"].Classified, "run_status shows who classified and why")

	code, out, errOut := cli(t, "status", "--address", server.Address, run.GetID())
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "retry by mcp: "+reason, "and so does `playbook status`")
	code, out, errOut = cli(t, "events", "--address", server.Address, run.GetID())
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "step_classified")
	require.Contains(t, out, "retry (by mcp): "+reason)

	// A retry through MCP is recorded in the new run: its events, its
	// aggregate (run_status) and `playbook status`.
	const why = "re-check with the new input"
	text, isErr = callTool(t, s, "retry_run", map[string]any{"run": run.GetID(), "step": "check", "reason": why})
	require.False(t, isErr, text)
	var retried struct {
		Run string `json:"run"`
	}
	require.NoError(t, json.Unmarshal([]byte(text), &retried))
	again := finish(t, tc.GetWorkflow(context.Background(), retried.Run, ""))
	require.Equal(t, "completed", again.Status)
	require.Equal(t, &contract.Origin{RetryOf: run.GetID(), From: "check", By: "mcp", Reason: why}, again.Origin)
	text, isErr = callTool(t, s, "run_status", map[string]any{"run": retried.Run})
	require.False(t, isErr, text)
	require.NoError(t, json.Unmarshal([]byte(text), &st))
	require.Equal(t, again.Origin, st.Origin, "run_status shows where the run came from")
	code, out, errOut = cli(t, "status", "--address", server.Address, retried.Run)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Started as a retry of "+run.GetID()+" from step check by mcp: "+why)

	// retry_run takes retry's options: a fixed playbook (here as text),
	// workload values on top of the earlier run's; unchanged steps are reused.
	src, err := os.ReadFile("../playbooks/pending_failed.yaml")
	require.NoError(t, err)
	text, isErr = callTool(t, s, "retry_run", map[string]any{"run": retried.Run, "reason": "publish fixed",
		"text": strings.Replace(string(src), "result: published", "result: republished", 1), "set": []string{"ready_file=" + ready}})
	require.False(t, isErr, text)
	var byText struct {
		Run  string `json:"run"`
		By   string `json:"by"`
		Plan []struct {
			Step   string `json:"step"`
			Reused bool   `json:"reused"`
			Why    string `json:"why"`
		} `json:"plan"`
	}
	require.NoError(t, json.Unmarshal([]byte(text), &byText))
	require.Equal(t, "mcp", byText.By)
	require.Equal(t, "check", byText.Plan[0].Step)
	require.True(t, byText.Plan[0].Reused, "retry_run returns its plan: %s", text)
	require.Contains(t, text, `"why": "tool.result changed"`, "the plan names what changed")
	fixed := finish(t, tc.GetWorkflow(context.Background(), byText.Run, ""))
	require.Equal(t, contract.StatusReused, fixed.Steps["check"].Status, "check and the value it reads did not change")
	require.Equal(t, "republished", fixed.Steps["publish"].Result)
	require.True(t, fixed.Origin.FileChanged)
	require.Equal(t, map[string]any{"ready_file": ready}, fixed.Origin.Overrides)
	code, out, errOut = cli(t, "events", "--address", server.Address, retried.Run)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "run_retried")
	require.Contains(t, out, "retry of "+run.GetID()+" from step check by mcp: "+why)
}

// Read-only by default: the tools that change runs refuse, and the run is
// untouched. Bad arguments are tool errors with one-line messages.
func TestMCPReadOnlyAndArgumentErrors(t *testing.T) {
	parallel(t)
	s := mcpSession(t)
	run := start(t, "../playbooks/pending_failed.yaml", "playbook", nil)
	t.Cleanup(func() { _ = tc.CancelWorkflow(context.Background(), run.GetID(), "") })
	waitFor(t, "check to be pending_failed", func() bool { return len(pendingSteps(t, run)) == 1 })

	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"classify_step", map[string]any{"run": run.GetID(), "step": "check", "action": "skip", "reason": "no"}},
		{"cancel_run", map[string]any{"run": run.GetID(), "reason": "no"}},
		{"retry_run", map[string]any{"run": run.GetID(), "reason": "no"}},
		{"send_event", map[string]any{"run": run.GetID(), "event": "go"}},
	} {
		text, isErr := callTool(t, s, call.tool, call.args)
		require.True(t, isErr, call.tool)
		require.Contains(t, text, "read-only: start it with `playbook mcp --allow-write`", call.tool)
	}
	require.Len(t, pendingSteps(t, run), 1, "the run is untouched")
	v, err := tc.QueryWorkflow(context.Background(), run.GetID(), "", contract.QueryEvents, 0)
	require.NoError(t, err)
	var evs []engine.Event
	require.NoError(t, v.Get(&evs))
	for _, e := range evs {
		require.NotEqual(t, "step_classified", e.Type, "nothing was classified")
		require.NotEqual(t, "cancel_requested", e.Type, "nothing was cancelled")
	}

	w := mcpSession(t, "--allow-write", "--root", "..")
	for _, call := range []struct {
		tool, want string
		args       map[string]any
	}{
		{"classify_step", `run "nosuch-run": not found`, map[string]any{"run": "nosuch-run", "step": "check", "action": "retry", "reason": "r"}},
		{"classify_step", `no step "nosuch" in playbook pending-failed`, map[string]any{"run": run.GetID(), "step": "nosuch", "action": "retry", "reason": "r"}},
		{"classify_step", `action "ignore": classify a step as retry, fail or skip`, map[string]any{"run": run.GetID(), "step": "check", "action": "ignore", "reason": "r"}},
		{"classify_step", `step "publish" is pending, not pending_failed: only a pending_failed step can be classified`, map[string]any{"run": run.GetID(), "step": "publish", "action": "retry", "reason": "r"}},
		{"classify_step", `reason: required`, map[string]any{"run": run.GetID(), "step": "check", "action": "retry", "reason": " "}},
		{"run_status", `run "nosuch-run": not found`, map[string]any{"run": "nosuch-run"}},
		{"list_pending_failed", `run "nosuch-run": not found`, map[string]any{"run": "nosuch-run"}},
		{"cancel_run", `run "nosuch-run": not found`, map[string]any{"run": "nosuch-run", "reason": "r"}},
		{"retry_run", `run "nosuch-run": not found`, map[string]any{"run": "nosuch-run", "reason": "r"}},
		{"retry_run", run.GetID() + " is still running; retry a finished run", map[string]any{"run": run.GetID(), "reason": "r"}},
		{"step_logs", `no logs for run "nosuch-run" step "check"`, map[string]any{"run": "nosuch-run", "step": "check"}},
		{"step_logs", `stream "both": give stdout or stderr`, map[string]any{"run": run.GetID(), "step": "check", "stream": "both"}},
		{"list_runs", `since "yesterday": give an RFC 3339 time`, map[string]any{"since": "yesterday"}},
		{"validate_playbook", `give either file or text`, map[string]any{}},
	} {
		text, isErr := callTool(t, w, call.tool, call.args)
		require.True(t, isErr, "%s %v: %s", call.tool, call.args, text)
		require.Contains(t, text, call.want, call.tool)
		require.NotContains(t, strings.TrimSpace(text), "\n", "one line: %s", text)
	}
	require.Len(t, pendingSteps(t, run), 1, "no bad call changed the run")

	text, isErr := callTool(t, w, "validate_playbook", map[string]any{"text": "metadata: {name: x}\nworkflow:\n  - step: a\n    tool: {kind: noop}\n    next: nowhere\n"})
	require.False(t, isErr, text)
	require.Contains(t, text, `"ok": false`)
	require.Contains(t, text, `inline.yaml:5: step \"a\"`, "the same one-line errors as validate, naming file, line and step")
	text, isErr = callTool(t, w, "validate_playbook", map[string]any{"file": "playbooks/pending_failed.yaml"})
	require.False(t, isErr, text)
	require.Contains(t, text, `"ok": true`)
}
