// Package storetest is the contract every store backend keeps, as test
// cases: the store's own tests run it on a directory (and on a bucket when
// a server is given), make test-cluster on a real S3-compatible server.
package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/internal/store"
)

// S3Var names a store URL of a real S3-compatible server for the s3
// backend's contract test; make test-cluster sets it (VersityGW).
const S3Var = "PLAYBOOK_TEST_S3_STORE"

func digest(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func put(t *testing.T, s store.Store, key, content string) {
	t.Helper()
	require.NoError(t, s.Put(context.Background(), key, strings.NewReader(content), int64(len(content)), digest([]byte(content))))
}

func read(t *testing.T, s store.Store, key string) (string, store.Object) {
	t.Helper()
	r, o, err := s.Get(context.Background(), key)
	require.NoError(t, err)
	defer r.Close()
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	return string(b), o
}

func keys(objs []store.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Key)
	}
	return out
}

// failingReader gives n bytes, then fails: a writer that dies mid-upload.
type failingReader struct{ n int }

func (f *failingReader) Read(b []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("the writer died")
	}
	k := min(len(b), f.n)
	for i := range k {
		b[i] = 'x'
	}
	f.n -= k
	return k, nil
}

// Contract runs the store contract's cases on stores open makes, a new
// and empty one for each case.
func Contract(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	t.Run("put then get returns the content, its size and a uri naming the key", func(t *testing.T) {
		s := open(t)
		put(t, s, "run/a/out/x.csv", "a,b\n1,2\n")
		got, o := read(t, s, "run/a/out/x.csv")
		require.Equal(t, "a,b\n1,2\n", got)
		require.EqualValues(t, 8, o.Bytes)
		require.Equal(t, digest([]byte("a,b\n1,2\n")), o.SHA256, "a get says the sha256 a reader checks")
		require.True(t, strings.HasSuffix(s.URI("run/a/out/x.csv"), "/run/a/out/x.csv"), s.URI("run/a/out/x.csv"))
	})
	t.Run("a put replaces the object", func(t *testing.T) {
		s := open(t)
		put(t, s, "r/k", "one")
		put(t, s, "r/k", "two!")
		got, _ := read(t, s, "r/k")
		require.Equal(t, "two!", got)
	})
	t.Run("list and sizes are by whole segments, list with sizes and digests", func(t *testing.T) {
		s := open(t)
		put(t, s, "r/a/1", "1")
		put(t, s, "r/a/sub/2", "22")
		put(t, s, "r/ab/3", "333")
		objs, err := s.List(ctx, "r/a")
		require.NoError(t, err)
		require.Equal(t, []string{"r/a/1", "r/a/sub/2"}, keys(objs))
		require.EqualValues(t, 2, objs[1].Bytes)
		require.Equal(t, digest([]byte("22")), objs[1].SHA256)
		all, err := s.List(ctx, "")
		require.NoError(t, err)
		require.Equal(t, []string{"r/a/1", "r/a/sub/2", "r/ab/3"}, keys(all))
		none, err := s.List(ctx, "nothing")
		require.NoError(t, err)
		require.Empty(t, none)
		// Sizes: the same keys, with their sizes alone.
		sizes, err := s.Sizes(ctx, "r/a")
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"r/a/1": 1, "r/a/sub/2": 2}, sizes)
		nothing, err := s.Sizes(ctx, "nothing")
		require.NoError(t, err)
		require.Empty(t, nothing)
	})
	t.Run("delete removes what is under the prefix only", func(t *testing.T) {
		s := open(t)
		put(t, s, "r/a/1", "1")
		put(t, s, "r/a/sub/2", "22")
		put(t, s, "r/ab/3", "333")
		n, err := s.Delete(ctx, "r/a")
		require.NoError(t, err)
		require.Equal(t, 2, n)
		all, err := s.List(ctx, "")
		require.NoError(t, err)
		require.Equal(t, []string{"r/ab/3"}, keys(all))
	})
	t.Run("get of a missing key is store.ErrNotFound", func(t *testing.T) {
		s := open(t)
		_, _, err := s.Get(ctx, "r/none")
		require.ErrorIs(t, err, store.ErrNotFound)
	})
	t.Run("content that is not what the put said is refused and nothing is visible", func(t *testing.T) {
		s := open(t)
		err := s.Put(ctx, "r/bad", strings.NewReader("hello"), 5, digest([]byte("other")))
		require.Error(t, err)
		err = s.Put(ctx, "r/short", strings.NewReader("hell"), 5, digest([]byte("hello")))
		require.Error(t, err)
		objs, err := s.List(ctx, "")
		require.NoError(t, err)
		require.Empty(t, objs)
	})
	t.Run("a writer that dies mid-upload leaves no object", func(t *testing.T) {
		s := open(t)
		put(t, s, "r/kept", "before")
		err := s.Put(ctx, "r/kept", &failingReader{n: 3 << 20}, 8<<20, digest(bytes.Repeat([]byte("x"), 8<<20)))
		require.Error(t, err)
		err = s.Put(ctx, "r/new", &failingReader{n: 3 << 20}, 8<<20, digest(bytes.Repeat([]byte("x"), 8<<20)))
		require.Error(t, err)
		objs, err := s.List(ctx, "")
		require.NoError(t, err)
		require.Equal(t, []string{"r/kept"}, keys(objs))
		got, _ := read(t, s, "r/kept")
		require.Equal(t, "before", got)
	})
	t.Run("keys that are not clean relative paths are refused", func(t *testing.T) {
		s := open(t)
		for _, k := range []string{"", "/abs", "a/../b", "a//b", "./a", "a\\b"} {
			require.Error(t, s.Put(ctx, k, strings.NewReader("x"), 1, digest([]byte("x"))), "key %q", k)
		}
	})
}
