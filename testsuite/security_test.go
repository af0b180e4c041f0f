package testsuite

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"playbook/interpreter/contract"
)

// Tokens in URLs never reach what people and webhooks see: the aggregate,
// status, events, the Web UI's details, the webhook's body.
func TestSecretsInURLsAreRedacted(t *testing.T) {
	parallel(t)
	hook := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hook" {
			b, _ := io.ReadAll(r.Body)
			hook <- string(b)
			return
		}
		http.Error(w, "denied for http://svc/?token=body-secret", http.StatusInternalServerError)
	}))
	defer srv.Close()
	file := writePlaybook(t, t.TempDir(), "pb.yaml", `metadata: {name: redaction}
workload:
  api: "`+srv.URL+`/v1?token=query-secret&page=2"
  hook: "`+srv.URL+`/hook?access_token=hook-secret"
failure_mode: continue
notify:
  on_failure: { webhook: "{{ workload.hook }}" }
workflow:
  - step: call
    tool: { kind: http, url: "{{ workload.api }}" }
  - step: fetch
    tool: { kind: shell, command: 'echo "curl: (22) https://etl:pass-secret@db.example/x failed" >&2; exit 22' }
`)
	code, out, errOut := cli(t, "run", "--address", server.Address, "--json", "--id", "redaction-1", file)
	require.Equal(t, 1, code, errOut)
	require.Contains(t, out, `?token=REDACTED\u0026page=2 answered 500`)
	require.Contains(t, out, "etl:REDACTED@db.example")
	var seen []string
	seen = append(seen, out, errOut)
	for _, cmd := range [][]string{{"status", "--json"}, {"status"}, {"events", "--json"}} {
		code, out, errOut := cli(t, append(append(cmd, "--address", server.Address), "redaction-1")...)
		require.Equal(t, 0, code, errOut)
		seen = append(seen, out)
	}
	select {
	case body := <-hook:
		seen = append(seen, body)
	case <-time.After(10 * time.Second):
		t.Fatal("the webhook was not called")
	}
	v, err := tc.QueryWorkflow(context.Background(), "redaction-1", "", "__temporal_workflow_metadata")
	require.NoError(t, err)
	var meta sdkpb.WorkflowMetadata
	require.NoError(t, v.Get(&meta))
	require.Contains(t, meta.GetCurrentDetails(), "REDACTED")
	seen = append(seen, meta.GetCurrentDetails())
	for _, s := range seen {
		for _, secret := range []string{"query-secret", "hook-secret", "pass-secret", "body-secret"} {
			require.NotContains(t, s, secret)
		}
	}
}

// A run ID that would climb out of the log directory is refused at
// submission; a run started by another client with such an ID fails its
// step without creating anything outside the log directory.
func TestRunIDStaysInTheLogDirectory(t *testing.T) {
	parallel(t)
	code, out, errOut := cli(t, "run", "--address", server.Address, "--id", "../../escaped", "../playbooks/hello.yaml")
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.Equal(t, `run: --id "../../escaped" contains '/': it names a directory, so it cannot hold a path separator`+"\n", errOut)
	_, err := tc.DescribeWorkflowExecution(context.Background(), "../../escaped", "")
	var notFound *serviceerror.NotFound
	require.ErrorAs(t, err, &notFound, "nothing was started")

	// Another client: the worker checks again before it makes a path.
	src, err := os.ReadFile("../playbooks/hello.yaml")
	require.NoError(t, err)
	id := "../escaped-" + time.Now().Format("150405.000")
	wr, err := tc.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: contract.TaskQueue},
		contract.WorkflowName, contract.Input{File: "hello.yaml", Source: string(src)})
	require.NoError(t, err)
	require.Error(t, wr.Get(context.Background(), nil), "the run failed")
	code, out, errOut = cli(t, "status", "--address", server.Address, id)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `tool_error: log directory: run ID "`+id+`" contains '/'`)
	_, err = os.Stat(filepath.Join(filepath.Dir(logDir), strings.TrimPrefix(id, "../")))
	require.True(t, os.IsNotExist(err), "nothing outside the log directory")
}

// Reads that input drives have bounds, named in the error: a loop's size,
// a playbook file's size, a result over Temporal's payload limit.
func TestInputBounds(t *testing.T) {
	parallel(t)
	// A range of two numbers over the bound is refused at submission; one
	// the workload gives fails the step when the run reaches it.
	file := writePlaybook(t, t.TempDir(), "pb.yaml", `metadata: {name: huge-loop}
workflow:
  - step: each
    loop: {in: "1..100001"}
    tool: {kind: noop, result: "{{ item }}"}
`)
	code, out, errOut := cli(t, "run", "--address", server.Address, "--json", file)
	require.Equal(t, 2, code, errOut)
	require.Empty(t, out)
	require.Equal(t, file+`:4: step "each": loop.in: "1..100001": loop gives 100001 elements, over the limit of 100000 elements per loop`+"\n", errOut)
	file = writePlaybook(t, t.TempDir(), "pb.yaml", `metadata: {name: huge-loop}
workload: {n: 3}
workflow:
  - step: each
    loop: {in: "1..workload.n"}
    tool: {kind: noop, result: "{{ item }}"}
`)
	code, out, errOut = cli(t, "run", "--address", server.Address, "--json", "--set", "n=100001", file)
	require.Equal(t, 1, code, errOut)
	require.Contains(t, out, `"message": "loop gives 100001 elements, over the limit of 100000 elements per loop"`)

	big := writePlaybook(t, t.TempDir(), "pb.yaml", "metadata: {name: big}\n# "+strings.Repeat("x", 1<<20)+"\nworkflow: [{step: a}]\n")
	code, out, errOut = cli(t, "validate", big)
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.Equal(t, big+": the file is 1048623 bytes, over the limit of 1048576 bytes (1 MiB) for a playbook\n", errOut)

	// An http answer whose body and parsed JSON together pass 2 MB.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`["` + strings.Repeat(`a","`, 240_000) + `"]`))
	}))
	defer srv.Close()
	file = writePlaybook(t, t.TempDir(), "pb.yaml", `metadata: {name: big-result}
workflow:
  - step: fetch
    tool: {kind: http, url: "`+srv.URL+`"}
`)
	code, out, errOut = cli(t, "run", "--address", server.Address, "--json", file)
	require.Equal(t, 1, code, errOut)
	require.Contains(t, out, `"type": "result_too_large"`)
	require.Contains(t, out, "over the 1.9 MiB a result may take of Temporal's 2 MiB payload limit")
}

// Every malformed playbook exits 2 from validate and from run, with its
// one pinned line on stderr, and starts nothing.
func TestMalformedPlaybooksStartNothing(t *testing.T) {
	parallel(t)
	const dir = "../submit/testdata/malformed"
	golden, err := os.ReadFile(filepath.Join(dir, "errors.golden"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(golden)), "\n")
	require.GreaterOrEqual(t, len(lines), 30)
	for i, line := range lines {
		name, want, _ := strings.Cut(line, "\t")
		want = strings.ReplaceAll(want, "$DIR", dir) + "\n"
		file := filepath.Join(dir, name)
		code, out, errOut := cli(t, "validate", file)
		require.Equal(t, 2, code, name)
		require.Empty(t, out, name)
		require.Equal(t, want, errOut, name)
		id := fmt.Sprintf("malformed-%d", i)
		code, out, errOut = cli(t, "run", "--address", server.Address, "--id", id, file)
		require.Equal(t, 2, code, name)
		require.Empty(t, out, name)
		require.Equal(t, want, errOut, name)
		_, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
		var notFound *serviceerror.NotFound
		require.ErrorAs(t, err, &notFound, "%s started nothing", name)
	}
}
