package activities

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
)

// A PLAYBOOK_ERROR_FILE over its bound is not read; the error says why.
func TestErrorFileIsBounded(t *testing.T) {
	a := &Activities{LogDir: t.TempDir()}
	o := a.runTool(context.Background(), shellInput(t, map[string]any{
		"command": `head -c 70000 /dev/zero | tr '\0' x > "$PLAYBOOK_ERROR_FILE"; echo boom >&2; exit 4`}), 1)
	require.NotNil(t, o.Err)
	require.Equal(t, "exited with code 4: boom (PLAYBOOK_ERROR_FILE is larger than its limit of 64 KiB)", o.Err.Message)
}

func TestPythonFilesAreBounded(t *testing.T) {
	a := &Activities{LogDir: t.TempDir()}
	o := a.runTool(context.Background(), pythonInput(t, "def main():\n    return 'x' * (2 << 20)\n", nil), 1)
	require.NotNil(t, o.Err)
	require.Equal(t, "result_too_large", o.Err.Type)
	require.Equal(t, "the value main returned (as JSON) is larger than its limit of 1 MiB: write large outputs to a file and return its path", o.Err.Message)

	o = a.runTool(context.Background(), pythonInput(t, "def main():\n    raise ValueError('x' * 300000)\n", nil), 2)
	require.NotNil(t, o.Err)
	require.Equal(t, "python_exception", o.Err.Type)
	require.Equal(t, "the step raised an exception, but the python exception file is larger than its limit of 256 KiB", o.Err.Message)
}

func TestHTTPBodyIsBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("x", 1<<20+1)))
	}))
	defer srv.Close()
	a := &Activities{}
	o := a.runTool(context.Background(), contract.StepInput{Kind: "http", Spec: map[string]any{"url": srv.URL}}, 1)
	require.NotNil(t, o.Err)
	require.Equal(t, "GET "+srv.URL+": the response body is larger than its limit of 1 MiB (a step's result must fit in Temporal's 2 MiB payload limit)", o.Err.Message)
}

// A result that would not fit in a Temporal payload fails the step with a
// message that says so, before the server would refuse it.
func TestResultOverThePayloadLimitFails(t *testing.T) {
	o := boundResult(ToolResult{Result: map[string]any{"body": strings.Repeat("x", 2<<20)}})
	require.NotNil(t, o.Err)
	require.Equal(t, "result_too_large", o.Err.Type)
	require.Equal(t, "the step's result is 2 MiB, over the 1.9 MiB a result may take of Temporal's 2 MiB payload limit: write large outputs to a file and return its path", o.Err.Message)
	small := ToolResult{Result: "ok"}
	require.Equal(t, small, boundResult(small))
}
