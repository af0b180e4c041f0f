package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// partial starts the name of a file being written: it is renamed to its
// key once whole, and a listing never shows it.
const partial = ".playbook-partial-"

// dir is a store in a local directory: each object a file at its key.
type dir struct{ root string }

func openDir(root string) (*dir, error) {
	if root == "" || !filepath.IsAbs(root) {
		return nil, fmt.Errorf("store file://%s: the directory must be an absolute path (file:///dir)", root)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("store file://%s: %v", root, err)
	}
	return &dir{root: filepath.Clean(root)}, nil
}

func (d *dir) URI(key string) string { return "file://" + filepath.Join(d.root, key) }

func (d *dir) path(key string) (string, error) {
	if err := CheckKey(key); err != nil {
		return "", err
	}
	if strings.HasPrefix(filepath.Base(key), partial) {
		return "", fmt.Errorf("key %q: a name starting %s is the store's own", key, partial)
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// Put writes a temporary file beside the key, synced, checks it, and
// renames it to the key: the rename is atomic, so a reader sees the old
// object or the new one, never a part; a writer killed before it leaves a
// temporary file that no listing shows and the next Delete removes.
func (d *dir) Put(ctx context.Context, key string, body io.Reader, size int64, sum string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), partial+"*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // gone after the rename: no-op then
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), readerWithContext(ctx, io.LimitReader(body, size+1)))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); n != size || got != sum {
		return &Mismatch{Key: key, WantBytes: size, Bytes: n, WantSHA256: sum, SHA256: got}
	}
	if err := os.Rename(tmp, p); err != nil {
		return err
	}
	return syncDir(filepath.Dir(p))
}

// syncDir makes a rename in the directory durable.
func syncDir(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func (d *dir) Get(ctx context.Context, key string) (io.ReadCloser, Object, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, Object{}, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Object{}, fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, Object{}, err
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, Object{}, fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	// A directory keeps no metadata beside a file: its sha256 is read from
	// its content, so that a reader can check what it got as from s3.
	sum, err := fileSHA256(ctx, p)
	if err != nil {
		f.Close()
		return nil, Object{}, err
	}
	return f, Object{Key: key, Bytes: fi.Size(), SHA256: sum, Modified: fi.ModTime()}, nil
}

// List walks the directory under prefix; each object's sha256 is read
// from its content (a directory keeps no metadata beside a file).
func (d *dir) List(ctx context.Context, prefix string) ([]Object, error) {
	var out []Object
	err := d.walk(prefix, func(key, p string, fi fs.FileInfo) error {
		sum, err := fileSHA256(ctx, p)
		if err != nil {
			return err
		}
		out = append(out, Object{Key: key, Bytes: fi.Size(), SHA256: sum, Modified: fi.ModTime()})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, err
}

func (d *dir) Sizes(_ context.Context, prefix string) (map[string]int64, error) {
	out := map[string]int64{}
	err := d.walk(prefix, func(key, _ string, fi fs.FileInfo) error {
		out[key] = fi.Size()
		return nil
	})
	return out, err
}

// Delete removes the objects under prefix, and the temporary files of
// writers that died there, and the directories left empty.
func (d *dir) Delete(_ context.Context, prefix string) (int, error) {
	n := 0
	var dirs []string
	err := d.walkAll(prefix, func(key, p string, fi fs.FileInfo) error {
		if fi.IsDir() {
			dirs = append(dirs, p)
			return nil
		}
		if err := os.Remove(p); err != nil {
			return err
		}
		if !strings.HasPrefix(fi.Name(), partial) {
			n++
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = os.Remove(dirs[i]) // only if empty
	}
	return n, err
}

// walk calls fn for every object under prefix.
func (d *dir) walk(prefix string, fn func(key, p string, fi fs.FileInfo) error) error {
	return d.walkAll(prefix, func(key, p string, fi fs.FileInfo) error {
		if fi.IsDir() || !fi.Mode().IsRegular() || strings.HasPrefix(fi.Name(), partial) {
			return nil
		}
		return fn(key, p, fi)
	})
}

// walkAll calls fn for everything under prefix, directories first.
func (d *dir) walkAll(prefix string, fn func(key, p string, fi fs.FileInfo) error) error {
	if err := checkPrefix(prefix); err != nil {
		return err
	}
	start := filepath.Join(d.root, filepath.FromSlash(strings.TrimSuffix(prefix, "/")))
	err := filepath.Walk(start, func(p string, fi fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(d.root, p)
		if rel == "." {
			return nil
		}
		return fn(filepath.ToSlash(rel), p, fi)
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// fileSHA256 is the sha256 (hex) of the file at p.
func fileSHA256(ctx context.Context, p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, readerWithContext(ctx, f)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// readerWithContext stops reading once ctx is done.
func readerWithContext(ctx context.Context, r io.Reader) io.Reader {
	return readerFunc(func(b []byte) (int, error) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		return r.Read(b)
	})
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(b []byte) (int, error) { return f(b) }
