package activities

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/internal/store"
	"playbook/interpreter/contract"
)

// storedData is a store holding "data" at run/a/x, and its ref.
func storedData(t *testing.T) (store.Store, contract.FileRef, []byte) {
	t.Helper()
	st, err := store.Open(context.Background(), "file://"+t.TempDir())
	require.NoError(t, err)
	body := []byte("data")
	sum := sha256.Sum256(body)
	ref := contract.FileRef{URI: st.URI("run/a/x"), Bytes: int64(len(body)), SHA256: hex.EncodeToString(sum[:])}
	require.NoError(t, st.Put(context.Background(), "run/a/x", bytes.NewReader(body), ref.Bytes, ref.SHA256))
	return st, ref, body
}

// A download's path that runs through a symlink out of the working
// directory is refused before any directory is made beyond it, and a
// path with .. is refused outright.
func TestDownloadMakesNothingOutsideTheWorkdir(t *testing.T) {
	ctx := context.Background()
	st, ref, body := storedData(t)

	dir, outside := t.TempDir(), t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link")))

	require.Error(t, download(ctx, st, dir, "link/new/x", ref))
	_, err := os.Stat(filepath.Join(outside, "new"))
	require.True(t, os.IsNotExist(err), "a directory was made outside the working directory")
	require.Error(t, download(ctx, st, dir, "../x", ref))

	require.NoError(t, download(ctx, st, dir, "in/side/x", ref))
	got, err := os.ReadFile(filepath.Join(dir, "in", "side", "x"))
	require.NoError(t, err)
	require.Equal(t, body, got)
}

// A step's inputs go to its workdir, made when it is not there yet.
func TestInputsMakeTheWorkdir(t *testing.T) {
	ctx := context.Background()
	st, ref, body := storedData(t)
	a := &Activities{Store: st}
	in := contract.StepInput{Kind: "shell", BaseDir: t.TempDir(), Spec: map[string]any{"workdir": "parts/1"},
		Files: &contract.StepFiles{Inputs: map[string]contract.FileRef{"in.txt": ref}}}
	require.Nil(t, a.takeInputs(ctx, in))
	got, err := os.ReadFile(filepath.Join(in.BaseDir, "parts", "1", "in.txt"))
	require.NoError(t, err)
	require.Equal(t, body, got)
}

// A step hands on at most MaxStepFiles files: past them, nothing.
func TestFindOutputsBoundsTheFilesCount(t *testing.T) {
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	for i := range MaxStepFiles + 1 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d", i)), nil, 0o644))
	}
	_, serr := findOutputs(dir, []string{"f*"})
	require.NotNil(t, serr)
	require.Equal(t, contract.ErrArtifact, serr.Type)
	require.Contains(t, serr.Message, "more than 1000 files")
	outs, serr := findOutputs(dir, []string{"f0*"})
	require.Nil(t, serr)
	require.Len(t, outs, 1000)
}
