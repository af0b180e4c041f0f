package testsuite

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"playbook/internal/quietlog"
	"playbook/interpreter"
	"playbook/interpreter/playbookwf"
	"playbook/worker"
)

// TestReplayRecordedHistories replays every checked-in history (recorded
// from the examples with `make histories`) against the current interpreter:
// a change that alters the commands a recorded run produced fails here.
func TestReplayRecordedHistories(t *testing.T) {
	// Superseded histories live in subfolders (docs/VERSIONING.md): all replay.
	var files []string
	err := filepath.WalkDir(filepath.Join("testdata", "histories"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".json") {
			files = append(files, path)
		}
		return err
	})
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(strings.TrimPrefix(file, filepath.Join("testdata", "histories")+"/"), ".json"), func(t *testing.T) {
			f, err := os.Open(file)
			require.NoError(t, err)
			defer f.Close()
			h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
			require.NoError(t, err)
			require.NoError(t, worker.Replay(h, quietlog.New()))
		})
	}
}

// TestReplayCatchesADifferentGraph proves the replay guard can fail: the
// recorded hello run, replayed with its frozen playbook changed so that the
// first step has another name, no longer matches its history.
func TestReplayCatchesADifferentGraph(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "histories", "hello.json"))
	require.NoError(t, err)
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	require.NoError(t, err)
	payload := h.Events[0].GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()[0]
	var in playbookwf.Input
	require.NoError(t, json.Unmarshal(payload.Data, &in))
	in.Source = strings.ReplaceAll(in.Source, "greet", "salute")
	payload.Data, err = json.Marshal(in)
	require.NoError(t, err)
	err = worker.Replay(h, quietlog.New())
	require.Error(t, err)
	require.Contains(t, err.Error(), "nondeterministic")
}

// `playbook history` records a run; `playbook replay` passes on it and on
// every checked-in history, and fails, naming the event, on a history
// recorded from a different graph.
func TestHistoryAndReplayCommands(t *testing.T) {
	r := runExample(t, "hello.yaml")
	file := filepath.Join(t.TempDir(), "hello.json")
	code, out, errOut := cli(t, "history", "--address", server.Address, "-o", file, r.agg.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Wrote ")

	recorded, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	require.NoError(t, err)
	code, out, errOut = cli(t, append([]string{"replay", file}, recorded...)...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, len(recorded)+1, strings.Count(out, ": ok ("))

	other := filepath.Join(t.TempDir(), "other-graph.json")
	// The same run, its frozen playbook's first step renamed: a different graph.
	f, err := os.Open(file)
	require.NoError(t, err)
	hist, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	f.Close()
	require.NoError(t, err)
	payload := hist.Events[0].GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()[0]
	var in playbookwf.Input
	require.NoError(t, json.Unmarshal(payload.Data, &in))
	in.Source = strings.ReplaceAll(in.Source, "greet", "salute")
	payload.Data, err = json.Marshal(in)
	require.NoError(t, err)
	out2, err := protojson.Marshal(hist)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(other, out2, 0o644))

	code, _, errOut = cli(t, "replay", other)
	require.Equal(t, 1, code)
	require.Regexp(t, `other-graph.json: diverges at event 5 ActivityTaskScheduled \(greet\): `, errOut)
}

// A change to the interpreter that alters the commands it issues (here: a
// timer before anything else) fails the replay of recorded histories.
func TestReplayCatchesAnInterpreterChange(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "histories", "failure_cleanup.json"))
	require.NoError(t, err)
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	require.NoError(t, err)
	changed := func(ctx workflow.Context, in playbookwf.Input) (*interpreter.Aggregate, error) {
		if err := workflow.Sleep(ctx, time.Millisecond); err != nil {
			return nil, err
		}
		return playbookwf.Playbook(ctx, in)
	}
	r := sdkworker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(changed, workflow.RegisterOptions{Name: playbookwf.WorkflowName})
	err = r.ReplayWorkflowHistory(quietlog.New(), h)
	require.Error(t, err)
	require.Contains(t, err.Error(), "TMPRL1100", "the SDK's nondeterminism error")
}
