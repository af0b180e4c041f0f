package runs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"playbook/internal/store"
	"playbook/interpreter/contract"
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

	all, err := Files(ctx, nil, st, "run-1", "")
	require.NoError(t, err)
	require.Len(t, all, 3)
	fan, err := Files(ctx, nil, st, "run-1", "fan")
	require.NoError(t, err)
	require.Len(t, fan, 2)
	require.Equal(t, "fan[0]", fan[0].Step)
	require.Equal(t, "out/a.csv", fan[0].Path)
	require.EqualValues(t, 1, fan[0].Bytes)
	require.Equal(t, st.URI("run-1/fan[0]/out/a.csv"), fan[0].URI)
	none, err := Files(ctx, nil, st, "run-1", "ext")
	require.NoError(t, err)
	require.Empty(t, none, "a step's name is matched whole")

	// Each attempt's files under a key of their own: of several attempts
	// that uploaded a path, the store's listing shows the newest.
	put("run-2/load@0a0a0a0a0a0a/out.txt", "old")
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(strings.TrimPrefix(st.URI(""), "file://"), "run-2", "load@0a0a0a0a0a0a", "out.txt"), old, old))
	put("run-2/load@0b0b0b0b0b0b/out.txt", "new")
	put("run-2/each[1]@0c0c0c0c0c0c/part.txt", "p")
	two, err := Files(ctx, nil, st, "run-2", "")
	require.NoError(t, err)
	require.Len(t, two, 2)
	require.Equal(t, StoredFile{Step: "each[1]", Path: "part.txt", Bytes: 1, SHA256: two[0].SHA256, URI: st.URI("run-2/each[1]@0c0c0c0c0c0c/part.txt")}, two[0])
	require.Equal(t, "load", two[1].Step)
	require.Equal(t, st.URI("run-2/load@0b0b0b0b0b0b/out.txt"), two[1].URI)

	_, err = Files(ctx, nil, st, "../x", "")
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

// An aggregate that keeps no files (compacted past its budget, or the
// empty one of a run Temporal ended with no worker to tell its steps) is
// not taken for a run without files: Files lists the store then.
func TestCompactedAggregatesListTheStore(t *testing.T) {
	agg := &contract.Aggregate{WorkflowID: "r1", Status: contract.RunCompleted, Steps: map[string]*contract.StepState{}}
	for s := range 16 {
		files := map[string]contract.FileRef{}
		for i := range 1000 {
			p := fmt.Sprintf("out/part-%04d.csv", i)
			files[p] = contract.FileRef{URI: "file:///s/r1/s@0123456789ab/" + p, Bytes: 10, SHA256: strings.Repeat("a", 64)}
		}
		agg.Steps[fmt.Sprintf("s%d", s)] = &contract.StepState{Status: contract.StatusCompleted, Attempts: 1, Files: files}
	}
	require.True(t, keepsFiles(agg))
	bounded := contract.BoundAggregate(agg, contract.AggregateBudget, func(step, field string) string { return "" })
	require.True(t, bounded.StepsCompacted)
	require.False(t, keepsFiles(bounded))
	require.False(t, keepsFiles(&contract.Aggregate{Status: "terminated"}))
}
