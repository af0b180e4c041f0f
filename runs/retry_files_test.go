package runs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/internal/store"
	"playbook/interpreter/contract"
)

// A retry judges a file gone when the workers' store does not hold its key
// with its recorded size, and cannot tell, so judges nothing gone, of a
// file another store holds; without a store it looks nowhere.
func TestARetryFindsTheFilesGone(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "file://"+t.TempDir())
	require.NoError(t, err)
	put := func(key, body string) contract.FileRef {
		sum := sha256.Sum256([]byte(body))
		require.NoError(t, st.Put(ctx, key, strings.NewReader(body), int64(len(body)), hex.EncodeToString(sum[:])))
		return contract.FileRef{URI: st.URI(key), Bytes: int64(len(body)), SHA256: hex.EncodeToString(sum[:])}
	}
	there := put("r1/make@a/out.csv", "a,b\n")
	other := put("r0/make@b/out.csv", "c\n")
	removed := put("r1/fan[1]@c/part.txt", "part\n")
	_, err = st.Delete(ctx, "r1/fan[1]@c/part.txt")
	require.NoError(t, err)
	resized := there
	resized.Bytes++
	elsewhere := contract.FileRef{URI: "s3://bucket/r1/make@a/out.csv", Bytes: 4}

	left := lookIn(st)
	for _, c := range []struct {
		name  string
		files map[string]contract.FileRef
		want  string
	}{
		{"all there, of two runs", map[string]contract.FileRef{"out.csv": there, "old.csv": other}, ""},
		{"one removed", map[string]contract.FileRef{"[0]/part.txt": there, "[1]/part.txt": removed}, "[1]/part.txt"},
		{"another size", map[string]contract.FileRef{"out.csv": resized}, "out.csv"},
		{"in another store", map[string]contract.FileRef{"out.csv": elsewhere}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, left.gone(ctx, c.files))
			require.Empty(t, lookIn(nil).gone(ctx, c.files), "without a store, nothing is gone")
		})
	}
	steps := map[string]*contract.StepState{
		"make":   {Status: contract.StatusCompleted, Files: map[string]contract.FileRef{"out.csv": there}},
		"fan":    {Status: contract.StatusReused, Files: map[string]contract.FileRef{"[1]/part.txt": removed}},
		"failed": {Status: contract.StatusFailed, Files: map[string]contract.FileRef{"x": removed}},
	}
	require.Equal(t, map[string]string{"fan": "[1]/part.txt"}, left.goneSteps(ctx, steps), "a step that did not complete runs anyway")

	done := map[string][]doneElement{"item a": {{files: map[string]contract.FileRef{"part.txt": removed}}, {files: map[string]contract.FileRef{"part.txt": there}}}, "item b": {{}}}
	left.present(ctx, "fan", done)
	require.Len(t, done["item a"], 1)
	require.Equal(t, there, done["item a"][0].files["part.txt"])
	require.Len(t, done["item b"], 1, "an element that handed nothing on stays")

	// A loop whose files no step that runs takes keeps its elements.
	kept := map[string][]doneElement{"item a": {{files: map[string]contract.FileRef{"part.txt": removed}}}}
	left.only(map[string]bool{"other": true}).present(ctx, "fan", kept)
	require.Len(t, kept["item a"], 1)
}

// failingSizes is a store whose listing fails part-way, as S3 may (a
// SlowDown on a later page): it returns what it listed, and the error.
type failingSizes struct{ store.Store }

func (failingSizes) Sizes(context.Context, string) (map[string]int64, error) {
	return map[string]int64{}, errors.New("SlowDown")
}

// A listing that fails judges nothing gone: a retry never runs again a
// step that succeeded for a store it could not read.
func TestAFailedListingJudgesNothingGone(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "file://"+t.TempDir())
	require.NoError(t, err)
	ref := contract.FileRef{URI: st.URI("r1/make@a/out.csv"), Bytes: 4}
	require.Empty(t, lookIn(failingSizes{st}).gone(ctx, map[string]contract.FileRef{"out.csv": ref}))
	require.Equal(t, "out.csv", lookIn(st).gone(ctx, map[string]contract.FileRef{"out.csv": ref}), "listed, it is gone")
}
