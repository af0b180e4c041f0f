package testsuite

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"playbook/internal/claims"
	"playbook/internal/quietlog"
	"playbook/internal/store"
	"playbook/interpreter/contract"
	"playbook/worker"
)

// bigResult is acceptance 3 of issue 43: big prints a JSON document of 50
// MB (a 50,000,000-byte string and a number); use reads a field of it and
// the length of the other.
const bigResult = `metadata: {name: big-result}
workflow:
  - step: big
    tool: {kind: shell, command: "printf '{\"n\": 7, \"blob\": \"'; head -c 50000000 /dev/zero | tr '\\0' a; printf '\"}'"}
  - step: use
    depends_on: [big]
    tool:
      kind: shell
      env: {N: "{{ steps.big.result.json.n }}", L: "{{ len(steps.big.result.json.blob) }}"}
      command: 'echo "$N $L"'
`

// With a store, a step's 50 MB JSON result completes, the next step reads
// a field of it, `status --json` shows it whole and the run's history
// stays under 1 MB (the store keeps the value, the history its claim);
// the history replays from the store. Without one, the same playbook
// behaves as before: the result is a stub, and the step reading past it
// fails saying so.
func TestALargeResultPassesWholeThroughTheStore(t *testing.T) {
	// Its runs carry tens of megabytes; it tells its CLI processes
	// PLAYBOOK_STORE.
	parallel(t, alone("cpu"))
	file := writePlaybook(t, t.TempDir(), "big.yaml", bigResult)

	// Without a store: the shared worker keeps no large values.
	code, agg := runJSON(t, file)
	require.Equal(t, 1, code)
	stub := agg.Steps["big"].Result.(map[string]any)["json"]
	n, ok := stub.(map[string]any)["bytes"].(float64)
	require.True(t, ok, "%v", stub)
	require.Greater(t, n, 50e6)
	require.Equal(t, contract.StatusFailed, agg.Steps["use"].Status)
	require.Contains(t, agg.Steps["use"].Error.Message, "steps.big.result.json was truncated: 47.7 MiB, over the budget of 1 MiB")

	// With one: a worker whose client keeps large values in the store, and
	// a CLI told where it is.
	dir := t.TempDir()
	url := "file://" + dir
	st, err := store.Open(context.Background(), url)
	require.NoError(t, err)
	opts := client.Options{HostPort: server.Address, Logger: quietlog.New()}
	worker.RefuseOversizedUpdates(&opts)
	claims.Use(&opts, claims.Open(st), true)
	cl, err := client.Dial(opts)
	require.NoError(t, err)
	defer cl.Close()
	const queue = "large-values"
	w := worker.New(cl, worker.Options{TaskQueue: queue, LogDir: t.TempDir(), Store: st, LargeValues: true})
	require.NoError(t, w.Start())
	defer w.Stop()
	env := []string{"PLAYBOOK_STORE=" + url}

	code, out, errOut := cliEnv(t, env, "run", "--address", server.Address, "--task-queue", queue, "--json", file)
	var whole contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &whole), "stderr:\n%s", errOut)
	require.Equal(t, 0, code, "%+v", whole.Steps["use"])
	require.Equal(t, "7 50000000", strings.TrimSpace(whole.Steps["use"].Result.(map[string]any)["stdout"].(string)))

	code, out, errOut = cliEnv(t, env, "status", "--address", server.Address, "--json", whole.WorkflowID)
	require.Equal(t, 0, code, errOut)
	var status struct {
		Steps map[string]*contract.StepState
	}
	require.NoError(t, json.Unmarshal([]byte(out), &status))
	blob := status.Steps["big"].Result.(map[string]any)["json"].(map[string]any)["blob"].(string)
	require.Len(t, blob, 50_000_000)

	h := history(t, whole.WorkflowID, whole.RunID)
	size := 0
	for _, e := range h.GetEvents() {
		size += proto.Size(e)
	}
	require.Less(t, size, 1<<20, "the history keeps claims, not the values")
	require.NoError(t, worker.ReplayFrom(h, quietlog.New(), nil, st))

	// The claims are under the run's ID, named by their content.
	objs, err := st.List(context.Background(), claims.Prefix+"/"+whole.WorkflowID)
	require.NoError(t, err)
	require.NotEmpty(t, objs)
	for _, o := range objs {
		require.True(t, strings.HasSuffix(o.Key, "/"+o.SHA256), o.Key)
	}

	// playbook replay reads the claims from the store it is given; without
	// one it says that the history needs it.
	file = filepath.Join(t.TempDir(), "claims.json")
	code, _, errOut = cli(t, "history", "--address", server.Address, "-o", file, whole.WorkflowID)
	require.Equal(t, 0, code, errOut)
	code, out, errOut = cli(t, "replay", "--store", url, file)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, file+": ok (")
	code, out, errOut = cliEnv(t, []string{"PLAYBOOK_STORE="}, "replay", file)
	require.Equal(t, 1, code, out)
	require.Equal(t, file+": the run kept large values in its store and this history holds claims to them: replay it with --store URL, the store its workers used\n", errOut)

	// A CLI given another store cannot read the run's result, and says why.
	other := t.TempDir()
	env = []string{"PLAYBOOK_STORE=file://" + other}
	code, _, errOut = cliEnv(t, env, "status", "--address", server.Address, "--json", whole.WorkflowID)
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, whole.WorkflowID+"'s result cannot be read: this run keeps a large value in its store, at file://"+other+"/_claims/"+whole.WorkflowID+"/")
	require.Contains(t, errOut, ": not there; give this command the store the workers keep it in: PLAYBOOK_STORE=URL, their --store (replay, files and mcp take --store too)")
}
