package runs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/internal/store"
	"playbook/interpreter/spec"
)

// Files lists a run's files by step from the store's keys, a loop's
// elements under their step, and nothing of another run.
func TestFilesListsARunsFilesByStep(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "file://"+t.TempDir())
	require.NoError(t, err)
	put := func(key, body string) {
		sum := sha256.Sum256([]byte(body))
		require.NoError(t, st.Put(ctx, key, bytes.NewReader([]byte(body)), int64(len(body)), hex.EncodeToString(sum[:])))
	}
	put("run-1/extract/raw.json", "{}")
	put("run-1/fan[0]/out/a.csv", "a")
	put("run-1/fan[1]/out/a.csv", "b")
	put("run-10/extract/raw.json", "{}")

	all, err := Files(ctx, st, "run-1", "")
	require.NoError(t, err)
	require.Len(t, all, 3)
	fan, err := Files(ctx, st, "run-1", "fan")
	require.NoError(t, err)
	require.Len(t, fan, 2)
	require.Equal(t, "fan[0]", fan[0].Step)
	require.Equal(t, "out/a.csv", fan[0].Path)
	require.EqualValues(t, 1, fan[0].Bytes)
	require.Equal(t, st.URI("run-1/fan[0]/out/a.csv"), fan[0].URI)
	none, err := Files(ctx, st, "run-1", "ext")
	require.NoError(t, err)
	require.Empty(t, none, "a step's name is matched whole")

	_, err = Files(ctx, st, "../x", "")
	var refused *RefusedError
	require.ErrorAs(t, err, &refused)
}

// A run whose steps all run on its own queue lists no queues; one whose
// step names another lists every step's, the playbook's default standing
// for the steps that name none.
func TestQueuesAreListedWhenAStepRunsElsewhere(t *testing.T) {
	parse := func(src string) *spec.Playbook {
		pb, err := spec.Parse("q.yaml", []byte(src))
		require.NoError(t, err)
		return pb
	}
	same := parse("metadata: {name: q}\nworkflow:\n  - {step: a, tool: {kind: shell, command: 'true'}}\n")
	require.Nil(t, queuesOf(same, "playbook"))
	split := parse("metadata: {name: q}\nqueue: cpu\nworkflow:\n  - {step: a, tool: {kind: shell, command: 'true'}}\n  - {step: b, queue: gpu, depends_on: [a], tool: {kind: shell, command: 'true'}}\n")
	require.Equal(t, map[string]string{"a": "cpu", "b": "gpu"}, queuesOf(split, "playbook"))
	require.Nil(t, queuesOf(nil, "playbook"))
}
