package testsuite

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// `playbook mcp` reads playbooks only under its --root, symbolic links
// resolved, never a special file; and step_logs names run and step by the
// one path rule, so neither climbs out of the log directory.
func TestMCPReadsOnlyUnderItsRoot(t *testing.T) {
	parallel(t)
	base := t.TempDir()
	root := filepath.Join(base, "root")
	require.NoError(t, os.Mkdir(root, 0o700))
	const secret = "secret-line-4711"
	writePlaybook(t, base, "outside.yaml", secret+": x\n")
	writePlaybook(t, root, "ok.yaml", "metadata: {name: ok}\nworkflow: [{step: a, tool: {kind: noop}}]\n")
	writePlaybook(t, root, "sub.yaml", "metadata: {name: sub}\nworkflow:\n  - step: child\n    tool: {kind: playbook, path: ../outside.yaml}\n")
	require.NoError(t, os.Symlink(filepath.Join(base, "outside.yaml"), filepath.Join(root, "link.yaml")))
	require.NoError(t, os.Symlink("/dev/zero", filepath.Join(root, "zero")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600))
	s := mcpSession(t, "--root", root)

	outside := "outside the directory this MCP server reads, " + root + " (--root)"
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"file": "/etc/passwd"}, "/etc/passwd: cannot read: " + outside},
		{map[string]any{"file": "../outside.yaml"}, "../outside.yaml: cannot read: " + outside},
		{map[string]any{"file": filepath.Join(base, "outside.yaml")}, "outside.yaml: cannot read: " + outside},
		{map[string]any{"file": "link.yaml"}, "link.yaml: cannot read: " + outside},
		{map[string]any{"file": "zero"}, "zero: cannot read: " + outside},
		{map[string]any{"file": "fifo"}, "fifo: cannot read: is a named pipe (FIFO), not a regular file"},
		{map[string]any{"file": "."}, ".: cannot read: is a directory, not a file"},
		{map[string]any{"file": "a\x00b"}, `"a\x00b": cannot read: the file name holds a control character`},
		{map[string]any{"file": "sub.yaml"}, `sub.yaml:4: step "child": sub-playbook ../outside.yaml: cannot read: ` + outside},
		{map[string]any{"text": "metadata: {name: x}\nworkflow:\n  - step: c\n    tool: {kind: playbook, path: /etc/shadow}\n"},
			`inline.yaml:4: step "c": sub-playbook /etc/shadow: cannot read: ` + outside},
		// A recovery script outside the root is refused the same whether
		// it is there or not (#39).
		{map[string]any{"text": withRecoveryScript("/etc/passwd")},
			`inline.yaml:5: failure handler "h": recovery_script /etc/passwd is ` + outside},
		{map[string]any{"text": withRecoveryScript("/etc/not-there.sh")},
			`inline.yaml:5: failure handler "h": recovery_script /etc/not-there.sh is ` + outside},
		{map[string]any{"text": withRecoveryScript("../outside.yaml")},
			`inline.yaml:5: failure handler "h": recovery_script ../outside.yaml is ` + outside},
		{map[string]any{"text": withRecoveryScript("./link.yaml")},
			`inline.yaml:5: failure handler "h": recovery_script ./link.yaml is ` + outside},
		{map[string]any{"text": withRecoveryScript("./not-there.sh")},
			`inline.yaml:5: failure handler "h": recovery_script ./not-there.sh does not exist`},
	} {
		text, isErr := callTool(t, s, "validate_playbook", c.args)
		require.False(t, isErr, text)
		var got struct {
			OK     bool     `json:"ok"`
			Errors []string `json:"errors"`
		}
		require.NoError(t, json.Unmarshal([]byte(text), &got), text)
		require.False(t, got.OK, c.args)
		require.Len(t, got.Errors, 1, text)
		require.Contains(t, got.Errors[0], c.want, c.args)
		require.NotContains(t, text, secret)
		require.NotContains(t, text, "root:")
	}
	text, isErr := callTool(t, s, "validate_playbook", map[string]any{"file": "ok.yaml"})
	require.False(t, isErr, text)
	require.Contains(t, text, `"ok": true`, "a file under the root reads; the server is still up")

	// A log directory's sibling, which `..` as a run's name would reach.
	escape, err := os.MkdirTemp(filepath.Dir(logDir), "mcp-escape")
	require.NoError(t, err)
	defer os.RemoveAll(escape)
	require.NoError(t, os.WriteFile(filepath.Join(escape, "attempt-1.stderr"), []byte(secret), 0o600))
	text, isErr = callTool(t, s, "step_logs", map[string]any{"run": "..", "step": filepath.Base(escape)})
	require.True(t, isErr, text)
	require.Equal(t, `run ".." would name a directory outside the log directory`, text)
	text, isErr = callTool(t, s, "step_logs", map[string]any{"run": "a/../..", "step": "x"})
	require.True(t, isErr, text)
	require.Contains(t, text, `run "a/../.." contains '/'`)
}

// withRecoveryScript is a playbook whose failure handler's recovery script
// (line 5) is script.
func withRecoveryScript(script string) string {
	return "metadata: {name: x}\nfailure_handlers:\n  - name: h\n    rules:\n      - {match_all_exit_codes: true, recovery_script: " + script +
		"}\nworkflow:\n  - step: a\n    tool: {kind: shell, command: 'true'}\n    failure_handler: h\n"
}
