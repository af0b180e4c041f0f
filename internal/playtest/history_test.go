package playtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	"playbook/worker"
)

// recordedHello is a real run's history, as `playbook history` wrote it.
const recordedHello = "../../testsuite/testdata/histories/v1/hello.json"

// A case with a recorded history passes only when the history replays
// through the current workflow: a history whose commands the workflow no
// longer issues fails the case, naming the event; a history that cannot be
// read makes the test file malformed.
func TestCaseReplaysItsRecordedHistory(t *testing.T) {
	b, err := os.ReadFile(recordedHello)
	require.NoError(t, err)
	pb := "metadata: { name: hello }\nworkflow:\n  - step: greet\n    tool: { kind: noop, result: hi }\n"

	path := writeCase(t, pb, "cases:\n  - name: replays\n    history: hello.history.json\n    expect: { status: completed }\n")
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(path), "hello.history.json"), b, 0o644))
	r := runNamed(t, path, "replays")
	require.True(t, r.Passed, "%v", r.Problems)

	// The same history with its first activity recorded under another
	// type: the workflow's command no longer matches it.
	h, err := worker.HistoryFromJSON(b)
	require.NoError(t, err)
	changed := false
	for _, e := range h.GetEvents() {
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && !changed {
			a.ActivityType.Name = "SomethingElse"
			changed = true
		}
	}
	require.True(t, changed, "the recorded run scheduled an activity")
	diverged, err := protojson.Marshal(h)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(path), "hello.history.json"), diverged, 0o644))
	r = runNamed(t, path, "replays")
	require.False(t, r.Passed)
	require.Len(t, r.Problems, 1)
	require.Contains(t, r.Problems[0], "history hello.history.json: the recorded run no longer replays through this build")
	require.Contains(t, r.Problems[0], "nondeterministic workflow: history event is ActivityTaskScheduled: (ActivityId:greet, ActivityType:(Name:SomethingElse)")

	// Missing, empty, not a history: one line each, at the case.
	for file, want := range map[string]string{
		"missing.json": "history missing.json: ",
		"empty.json":   "history empty.json: not a history: the file is empty",
		"p.yaml":       "history p.yaml: not a history: ",
	} {
		path := writeCase(t, pb, "cases:\n  - name: replays\n    history: "+file+"\n    expect: { status: completed }\n")
		require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(path), "empty.json"), nil, 0o644))
		_, err := Load(path)
		var bad *MalformedError
		require.ErrorAs(t, err, &bad, file)
		require.Len(t, bad.Lines, 1, file)
		require.Contains(t, bad.Lines[0], path+`:2: case "replays": `+want, file)
	}
}
