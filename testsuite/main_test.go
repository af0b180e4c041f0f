// Package testsuite holds the end-to-end tests: real playbooks through the
// real CLI, on a real embedded Temporal server with a real worker, and the
// replay tests that keep the interpreter deterministic.
package testsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	"playbook/cmd/playbook/commands"
	"playbook/internal/proctest"
	"playbook/internal/quietlog"
	"playbook/interpreter"
	"playbook/worker"
)

// maxRecordedHistory is the largest history kept in testdata/histories.
const maxRecordedHistory = 1 << 20

var update = flag.Bool("update", false, "re-record the checked-in histories under testdata/histories")

// The package shares one server and worker, as a user's dev server would.
var (
	server *worker.DevServer
	tc     client.Client
	logDir string
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var err error
	server, err = worker.StartDevServer(worker.DevServerOptions{IP: "127.0.0.1"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "embedded server:", err)
		return 1
	}
	defer server.Stop()
	tc, err = client.Dial(client.Options{HostPort: server.Address, Logger: quietlog.New()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		return 1
	}
	defer tc.Close()
	logDir, _ = os.MkdirTemp("", "playbook-e2e-logs")
	defer os.RemoveAll(logDir)
	w := worker.New(tc, worker.Options{LogDir: logDir})
	if err := w.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	defer w.Stop()
	return m.Run()
}

// cli runs the playbook CLI in-process.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = commands.Main(context.Background(), append([]string{"playbook"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// runResult is one `playbook run --json` on the shared server.
type runResult struct {
	code   int
	agg    *interpreter.Aggregate
	stderr string
}

// runExample runs a playbook from playbooks/ with `run --json`, checks that
// stdout holds only the aggregate, and replays the run's history.
func runExample(t *testing.T, name string, extra ...string) runResult {
	t.Helper()
	args := append([]string{"run", "--address", server.Address, "--json"}, extra...)
	code, out, errOut := cli(t, append(args, filepath.Join("..", "playbooks", name))...)
	var agg interpreter.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &agg), "stdout is exactly the aggregate; stderr:\n%s", errOut)
	require.Equal(t, exitCodeFor(agg.Status), code, errOut)
	replay(t, name, agg.WorkflowID, agg.RunID)
	return runResult{code: code, agg: &agg, stderr: errOut}
}

func exitCodeFor(status string) int {
	return map[string]int{"completed": 0, "failed": 1, "cancelled": 3}[status]
}

// history fetches a run's full history.
func history(t *testing.T, workflowID, runID string) *historypb.History {
	t.Helper()
	it := tc.GetWorkflowHistory(context.Background(), workflowID, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, e)
	}
	return h
}

// replay replays a finished run against the current interpreter; with
// -update it also records the history as testdata/histories/NAME.json.
func replay(t *testing.T, name, workflowID, runID string) {
	t.Helper()
	h := history(t, workflowID, runID)
	require.NoError(t, worker.Replay(h, quietlog.New()), "replaying %s", workflowID)
	if *update && name != "" {
		b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(h)
		require.NoError(t, err)
		if len(b) > maxRecordedHistory {
			return // replayed above; too big to keep in the repository
		}
		file := filepath.Join("testdata", "histories", strings.ReplaceAll(strings.TrimSuffix(name, ".yaml"), "/", "_")+".json")
		require.NoError(t, os.WriteFile(file, b, 0o644))
	}
}

func readLog(t *testing.T, workflowID, step, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(logDir, workflowID, step, file))
	require.NoError(t, err)
	return string(b)
}

// processesMatching lists the PIDs whose command line contains s.
var processesMatching = proctest.Matching
