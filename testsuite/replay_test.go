package testsuite

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"playbook/internal/quietlog"
	"playbook/interpreter/contract"
	"playbook/interpreter/playbookwf"
	"playbook/worker"
)

// TestReplayRecordedHistories replays every history of the corpus
// (testdata/histories/v<N>/, each folder recorded by one build: see its
// RECORDED_BY) against the current interpreter: a change that alters the
// commands a recorded run produced fails here. The corpus must take both
// sides of every registered change (playbookwf.Changes): a history that
// reaches the change's point with its marker (recorded after the change)
// and one that reaches it without (recorded before): otherwise nothing
// proves that runs of either kind still replay.
func TestReplayRecordedHistories(t *testing.T) {
	// Serial: replaying the corpus keeps both cores busy, and a starved replay trips the SDK's deadlock detector (see parallel).
	files := corpusFiles(t)
	var mu sync.Mutex
	runs := map[string]string{}           // run ID → file
	taken := map[string]map[string]bool{} // file → "change new" / "change old"
	stop := playbookwf.ObserveVersions(func(run workflow.Execution, change string, v workflow.Version) {
		mu.Lock()
		defer mu.Unlock()
		if file, ok := runs[run.RunID]; ok {
			taken[file][sideOf(change, v)] = true
		}
	})
	defer stop()
	for _, file := range files {
		t.Run(strings.TrimSuffix(strings.TrimPrefix(file, filepath.Join("testdata", "histories")+"/"), ".json"), func(t *testing.T) {
			h := readHistory(t, file)
			started := h.Events[0].GetWorkflowExecutionStartedEventAttributes()
			mu.Lock()
			runs[started.GetOriginalExecutionRunId()] = file
			taken[file] = map[string]bool{}
			mu.Unlock()
			require.NoError(t, worker.Replay(h, quietlog.New()))
		})
	}
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, corpusGaps(taken), "the replay corpus must take both sides of every change (docs/VERSIONING.md)")

	// corpusGaps can fail: with the histories that take one side of a
	// change left out, it names that side.
	c := playbookwf.Changes()[0]
	without := map[string]map[string]bool{}
	for file, sides := range taken {
		if !sides[sideOf(c.ID, workflow.DefaultVersion)] {
			without[file] = sides
		}
	}
	require.Contains(t, corpusGaps(without), c.ID+" old")
}

// sideOf names the side of a change a version takes.
func sideOf(change string, v workflow.Version) string {
	if v == workflow.DefaultVersion {
		return change + " old"
	}
	return change + " new"
}

// corpusGaps lists the sides of registered changes that no history takes.
func corpusGaps(taken map[string]map[string]bool) []string {
	var gaps []string
	for _, c := range playbookwf.Changes() {
		for _, side := range []string{sideOf(c.ID, c.Max), sideOf(c.ID, workflow.DefaultVersion)} {
			if c.NoOldSide != "" && side == sideOf(c.ID, workflow.DefaultVersion) {
				continue
			}
			found := false
			for _, sides := range taken {
				found = found || sides[side]
			}
			if !found {
				gaps = append(gaps, side)
			}
		}
	}
	return gaps
}

// corpusFiles lists the corpus's histories, folder by folder.
func corpusFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(filepath.Join("testdata", "histories"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".json") || strings.HasSuffix(path, ".json.gz")) {
			files = append(files, path)
		}
		return err
	})
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

// readHistory reads a recorded history, JSON or gzipped JSON.
func readHistory(t *testing.T, file string) *historypb.History {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(file, ".gz") {
		zr, err := gzip.NewReader(f)
		require.NoError(t, err)
		defer zr.Close()
		r = zr
	}
	h, err := client.HistoryFromJSON(r, client.HistoryJSONOptions{})
	require.NoError(t, err)
	return h
}

// TestReplayCatchesADifferentGraph proves the replay guard can fail: the
// recorded hello run, replayed with its frozen playbook changed so that the
// first step has another name, no longer matches its history.
func TestReplayCatchesADifferentGraph(t *testing.T) {
	parallel(t)
	h := readHistory(t, filepath.Join("testdata", "histories", "v1", "hello.json"))
	renameGreet(t, h)
	err := worker.Replay(h, quietlog.New())
	require.Error(t, err)
	require.Contains(t, err.Error(), "nondeterministic")
}

// renameGreet changes a recorded hello run's frozen playbook so that its
// first step, greet, is named salute: a different graph.
func renameGreet(t *testing.T, h *historypb.History) {
	t.Helper()
	payload := h.Events[0].GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()[0]
	var in contract.Input
	require.NoError(t, json.Unmarshal(payload.Data, &in))
	in.Source = strings.ReplaceAll(in.Source, "greet", "salute")
	var err error
	payload.Data, err = json.Marshal(in)
	require.NoError(t, err)
}

// `playbook history` records a run; `playbook replay` passes on it and on
// every JSON history of the corpus (the gzipped ones are the replay test's
// alone), and fails, naming the event, on a history recorded from a
// different graph.
func TestHistoryAndReplayCommands(t *testing.T) {
	// Serial: replaying the corpus keeps both cores busy, and a starved replay trips the SDK's deadlock detector (see parallel).
	r := runExample(t, "hello.yaml")
	file := filepath.Join(t.TempDir(), "hello.json")
	code, out, errOut := cli(t, "history", "--address", server.Address, "-o", file, r.agg.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Wrote ")

	var recorded []string
	for _, f := range corpusFiles(t) {
		if strings.HasSuffix(f, ".json") {
			recorded = append(recorded, f)
		}
	}
	code, out, errOut = cli(t, append([]string{"replay", file}, recorded...)...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, len(recorded)+1, strings.Count(out, ": ok ("))

	other := filepath.Join(t.TempDir(), "other-graph.json")
	// The same run, its frozen playbook's first step renamed: a different graph.
	hist := readHistory(t, file)
	renameGreet(t, hist)
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
	parallel(t)
	h := readHistory(t, filepath.Join("testdata", "histories", "v1", "failure_cleanup.json"))
	changed := func(ctx workflow.Context, in contract.Input) (*contract.Aggregate, error) {
		if err := workflow.Sleep(ctx, time.Millisecond); err != nil {
			return nil, err
		}
		return playbookwf.Playbook(ctx, in)
	}
	r := sdkworker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(changed, workflow.RegisterOptions{Name: contract.WorkflowName})
	err := r.ReplayWorkflowHistory(quietlog.New(), h)
	require.Error(t, err)
	require.Contains(t, err.Error(), "TMPRL1100", "the SDK's nondeterminism error")
}
