package testsuite

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"playbook/interpreter/playbookwf"
	"playbook/worker"
)

// TestReplayRecordedHistories replays every checked-in history (recorded
// from the examples with `make histories`) against the current interpreter:
// a change that alters the commands a recorded run produced fails here.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".json"), func(t *testing.T) {
			f, err := os.Open(file)
			require.NoError(t, err)
			defer f.Close()
			h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
			require.NoError(t, err)
			require.NoError(t, worker.Replay(h, quietLogger()))
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
	err = worker.Replay(h, quietLogger())
	require.Error(t, err)
	require.Contains(t, err.Error(), "nondeterministic")
}
