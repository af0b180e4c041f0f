package activities

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
)

// A run ID or step name that would climb out of the log directory fails the
// step before anything is created, whoever started the run.
func TestLogPathsStayInTheLogDirectory(t *testing.T) {
	root := t.TempDir()
	a := &Activities{LogDir: filepath.Join(root, "logs")}
	for _, in := range []contract.StepInput{
		{WorkflowID: "../../escaped", Step: "s"},
		{WorkflowID: "wf", Step: "../../escaped"},
		{WorkflowID: "..", Step: "s"},
		{WorkflowID: "wf\x00", Step: "s"},
	} {
		in.Kind, in.BaseDir = "shell", root
		in.Spec = map[string]any{"command": "touch " + filepath.Join(root, "ran")}
		o := a.runTool(context.Background(), in, 1)
		require.NotNil(t, o.Err, "%q %q", in.WorkflowID, in.Step)
		require.Equal(t, "tool_error", o.Err.Type)
		require.Contains(t, o.Err.Message, "log directory: ")
	}
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing was created, nothing ran")
}

// Logs and the python argument file are the worker user's alone.
func TestLogFilesArePrivate(t *testing.T) {
	t.Parallel()
	a := &Activities{LogDir: filepath.Join(t.TempDir(), "logs")}
	o := a.runTool(context.Background(), shellInput(t, map[string]any{"command": "echo hi"}), 1)
	require.Nil(t, o.Err)
	for path, mode := range map[string]os.FileMode{
		a.LogDir: 0o700, filepath.Join(a.LogDir, "wf-1"): 0o700, filepath.Join(a.LogDir, "wf-1", "s"): 0o700,
		filepath.Join(a.LogDir, "wf-1", "s", "attempt-1.stdout"): 0o600,
		filepath.Join(a.LogDir, "wf-1", "s", "attempt-1.stderr"): 0o600,
	} {
		st, err := os.Stat(path)
		require.NoError(t, err)
		require.Equal(t, mode, st.Mode().Perm(), path)
	}
	in := pythonInput(t, "def main(secret):\n    return 1\n", map[string]any{"secret": "s3cr3t"})
	require.Nil(t, a.runTool(context.Background(), in, 1).Err)
	for _, f := range []string{"attempt-1.args.json", "attempt-1.py", "attempt-1.stdout"} {
		st, err := os.Stat(filepath.Join(a.LogDir, "wf-1", "py", f))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), f)
	}
}
