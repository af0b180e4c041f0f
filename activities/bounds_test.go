package activities

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec/expr"
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
	t.Parallel() // a Python process can take seconds to start on a loaded machine
	a := &Activities{LogDir: t.TempDir()}
	o := a.runTool(context.Background(), pythonInput(t, "def main():\n    return 'x' * (2 << 20)\n", nil), 1)
	require.NotNil(t, o.Err)
	require.Equal(t, "result_too_large", o.Err.Type)
	require.Equal(t, "the value main returned (as JSON) is larger than its limit of 1 MiB: hand large outputs on as files (outputs.files), or give the workers and the CLI a store (PLAYBOOK_STORE), and a value may take 64 MiB", o.Err.Message)

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

// An http step's JSON body is in its result twice (body and json): one
// that fits its 1 MiB limit but not twice in the result fails as
// result_too_large, saying why and what lets it through (a store), not
// to write a file, which an http step cannot.
func TestHTTPJSONBodyHeldTwice(t *testing.T) {
	body := `{"x":"` + strings.Repeat("a", 1<<20-8) + `"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(body)) }))
	defer srv.Close()
	a := &Activities{}
	o := a.runTool(context.Background(), contract.StepInput{Kind: "http", Spec: map[string]any{"url": srv.URL}}, 1)
	require.Nil(t, o.Err, "the body is within its own limit")
	o = boundResult(o, false)
	require.NotNil(t, o.Err)
	require.Equal(t, "result_too_large", o.Err.Type)
	require.Equal(t, "the step's result is 2 MiB (its JSON body of 1 MiB is in it twice, as body and as json), over the 1.9 MiB a result may take of Temporal's 2 MiB payload limit: give the workers and the CLI a store (PLAYBOOK_STORE), and a result may take 64 MiB", o.Err.Message)
	o = a.runTool(context.Background(), contract.StepInput{Kind: "http", Spec: map[string]any{"url": srv.URL}}, 1)
	require.Nil(t, boundResult(o, true).Err, "with a store the body is whole twice")
}

// A result that would not fit in a Temporal payload fails the step with a
// message that says so, before the server would refuse it.
func TestResultOverThePayloadLimitFails(t *testing.T) {
	o := boundResult(ToolResult{Result: map[string]any{"body": strings.Repeat("x", 2<<20)}}, false)
	require.NotNil(t, o.Err)
	require.Equal(t, "result_too_large", o.Err.Type)
	require.Equal(t, "the step's result is 2 MiB, over the 1.9 MiB a result may take of Temporal's 2 MiB payload limit: hand large outputs on as files (outputs.files), or give the workers and the CLI a store (PLAYBOOK_STORE), and a result may take 64 MiB", o.Err.Message)
	small := ToolResult{Result: "ok"}
	require.Equal(t, small, boundResult(small, false))
}

// With large values kept in the run's store, a result is bounded by
// LargeValueBudget, not by Temporal's payload limit.
func TestALargeValuesResultIsBoundedByItsBudget(t *testing.T) {
	t.Parallel()
	big := ToolResult{Result: map[string]any{"body": strings.Repeat("x", 2<<20)}}
	require.Equal(t, big, boundResult(big, true))
	o := boundResult(ToolResult{Result: strings.Repeat("x", contract.LargeValueBudget+128<<10)}, true)
	require.NotNil(t, o.Err)
	require.Equal(t, "result_too_large", o.Err.Type)
	require.Contains(t, o.Err.Message, "over the 64 MiB a value may take")
}

// A shell step's stdout over 1 MiB that is JSON is whole in a run that
// keeps large values in its store, on a worker that does too; else it is a
// stub that says so (a step reading past it is told the value was cut),
// and a stdout that is not JSON stays null.
func TestStdoutJSONOverItsLimitIsAStubUnlessLargeValuesAreKept(t *testing.T) {
	dir := t.TempDir()
	doc := `{"rows": "` + strings.Repeat("r", 2<<20) + `", "n": 7}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "doc.json"), []byte(doc), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "text"), []byte(strings.Repeat("r", 2<<20)), 0o600))
	in := func(file string, large bool) contract.StepInput {
		return contract.StepInput{WorkflowID: "w", Step: "s", Kind: "shell", BaseDir: dir, LargeValues: large, Spec: map[string]any{"command": "cat " + file}}
	}
	jsonOf := func(a *Activities, in contract.StepInput) any {
		o := a.runTool(context.Background(), in, 1)
		require.Nil(t, o.Err)
		return o.Result.(map[string]any)["json"]
	}
	kept := &Activities{LogDir: t.TempDir(), LargeValues: true}
	require.Equal(t, 7.0, jsonOf(kept, in("doc.json", true)).(map[string]any)["n"])

	for _, a := range []*Activities{{LogDir: t.TempDir()}, kept} {
		stub := jsonOf(a, in("doc.json", false))
		n, ok := expr.TruncatedSize(stub)
		require.True(t, ok, "%v", stub)
		require.Equal(t, len(doc), n)
		require.Contains(t, stub.(map[string]any)["full_in"], "PLAYBOOK_STORE")
		require.Nil(t, jsonOf(a, in("text", false)))
	}
}
