package activities

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
)

func pythonInput(t *testing.T, code string, args map[string]any) contract.StepInput {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 on this machine")
	}
	return contract.StepInput{WorkflowID: "wf-1", Step: "py", Kind: "python", BaseDir: t.TempDir(), Spec: map[string]any{"code": code, "args": args}}
}

func TestPythonReturnsMain(t *testing.T) {
	t.Parallel() // a Python process can take seconds to start on a loaded machine
	a := &Activities{LogDir: t.TempDir()}
	o := a.runTool(context.Background(), pythonInput(t, "def main(values, name):\n    print('hi')\n    return {'n': len(values), 'name': name}\n",
		map[string]any{"values": []any{1, 2, 3}, "name": "x"}), 1)
	require.Nil(t, o.Err)
	require.Equal(t, map[string]any{"n": 3.0, "name": "x"}, o.Result)
}

// A value JSON cannot hold is written as its str(): NaN and the
// infinities too, which Python's json writes as bare words no JSON
// reader takes (the whole result was read as null, the step completed).
func TestPythonNonFiniteFloatsAreTheirStr(t *testing.T) {
	t.Parallel()
	a := &Activities{LogDir: t.TempDir()}
	o := a.runTool(context.Background(), pythonInput(t, "import datetime\ndef main():\n    return {'rows': 10, 'ratio': float('nan'), 'top': [float('inf'), -float('inf')], 'at': datetime.date(2026, 1, 2), float('nan'): 1, (1, 2): 'a', datetime.date(2026, 1, 3): 'b', 7: 'c'}\n", nil), 1)
	require.Nil(t, o.Err)
	require.Equal(t, map[string]any{"rows": 10.0, "ratio": "nan", "top": []any{"inf", "-inf"}, "at": "2026-01-02", "nan": 1.0, "(1, 2)": "a", "2026-01-03": "b", "7": "c"}, o.Result)
}

func TestPythonException(t *testing.T) {
	t.Parallel() // a Python process can take seconds to start on a loaded machine
	a := &Activities{LogDir: t.TempDir()}
	o := a.runTool(context.Background(), pythonInput(t, "def main():\n    raise ValueError('bad input')\n", nil), 1)
	require.NotNil(t, o.Err)
	require.Equal(t, "python_exception", o.Err.Type)
	require.Equal(t, "ValueError: bad input", o.Err.Message)
	details := o.Err.Details.(map[string]any)
	require.Equal(t, "ValueError", details["exception"])
	require.Contains(t, details["traceback"], "Traceback (most recent call last)")
	require.Contains(t, details["traceback"], "raise ValueError('bad input')")
	require.NotContains(t, details["traceback"], `File "<string>"`, "the runner's own frames are left out")
	require.Contains(t, details["stderr"], "raise ValueError('bad input')", "the traceback is in the attempt's stderr (and its log), as python prints it")
}

func TestPythonExitCodeAndMissingMain(t *testing.T) {
	t.Parallel() // a Python process can take seconds to start on a loaded machine
	a := &Activities{LogDir: t.TempDir()}
	o := a.runTool(context.Background(), pythonInput(t, "import sys\ndef main():\n    sys.exit(3)\n", nil), 1)
	require.Equal(t, "exit_code", o.Err.Type)
	require.Equal(t, 3, *o.ExitCode)

	o = a.runTool(context.Background(), pythonInput(t, "x = 1\n", nil), 1)
	require.Equal(t, "python_exception", o.Err.Type)
	require.Equal(t, "NameError: the step's code defines no main(**args)", o.Err.Message)
}

func TestProcessSuppliesItsOwnError(t *testing.T) {
	a := &Activities{LogDir: t.TempDir()}
	o := a.runTool(context.Background(), shellInput(t, map[string]any{
		"command": `echo '{"message": "quota exceeded", "details": {"bucket": "b"}}' > "$PLAYBOOK_ERROR_FILE"; exit 4`}), 1)
	require.Equal(t, "exit_code", o.Err.Type)
	require.Equal(t, "quota exceeded", o.Err.Message)
	details := o.Err.Details.(map[string]any)
	require.Equal(t, map[string]any{"bucket": "b"}, details["supplied"])
	require.Equal(t, 4, details["exit_code"])
	require.True(t, strings.HasSuffix(details["stderr_log"].(string), "attempt-1.stderr"))
}

func TestPythonMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	a := &Activities{LogDir: t.TempDir()}
	o := a.runTool(context.Background(), contract.StepInput{WorkflowID: "wf", Step: "py", Kind: "python", Spec: map[string]any{"code": "def main(): pass"}}, 1)
	require.Equal(t, "tool_error", o.Err.Type)
	require.Equal(t, "python3 is not on this worker's PATH: install Python 3 where the worker runs", o.Err.Message)
}
