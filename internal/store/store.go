// Package store keeps the files steps hand to each other: a run's store,
// named by one URL, is either a local directory (file:///dir) or a bucket
// of an S3-compatible server (s3://bucket/prefix?endpoint=...&region=...).
//
// Every object is written whole or not at all: a reader of the store never
// sees part of an object, whatever happens to the writer meanwhile (a
// directory writes a temporary file and renames it; S3 makes an object
// visible when its upload completes). A Put says the size and the sha256
// of what it writes, and the store refuses content that does not match.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"strings"
	"time"
)

// Store is where a run's files are kept, by key ("RUN/STEP/PATH").
type Store interface {
	// Put writes the object key from body, which holds size bytes whose
	// sha256 (hex) is sum; a body that does not is refused and nothing is
	// written. An object already at key is replaced.
	Put(ctx context.Context, key string, body io.Reader, size int64, sum string) error
	// Get opens the object key; ErrNotFound when there is none.
	Get(ctx context.Context, key string) (io.ReadCloser, Object, error)
	// List lists the objects under prefix (whole path segments: "a/b"
	// lists "a/b/c", not "a/bc"), by key.
	List(ctx context.Context, prefix string) ([]Object, error)
	// Sizes lists the objects under prefix as List does, but only their
	// keys and sizes: one listing, no object read or asked for its
	// metadata (a retry looking for thousands of files).
	Sizes(ctx context.Context, prefix string) (map[string]int64, error)
	// Delete removes the objects under prefix and says how many.
	Delete(ctx context.Context, prefix string) (int, error)
	// URI names the object key for people and for a step's result.
	URI(key string) string
}

// Object is one stored file.
type Object struct {
	Key      string    `json:"key"`
	Bytes    int64     `json:"bytes"`
	SHA256   string    `json:"sha256"`
	Modified time.Time `json:"modified"`
}

// ErrNotFound is a Get of a key with no object.
var ErrNotFound = errors.New("no such object in the store")

// Mismatch is content that is not what its Put said.
type Mismatch struct {
	Key                string
	WantBytes, Bytes   int64
	WantSHA256, SHA256 string
}

func (e *Mismatch) Error() string {
	if e.Bytes != e.WantBytes {
		return fmt.Sprintf("%s: %d bytes arrived, %d were expected", e.Key, e.Bytes, e.WantBytes)
	}
	return fmt.Sprintf("%s: sha256 %s, %s was expected", e.Key, e.SHA256, e.WantSHA256)
}

// Open opens the store url names: file:///dir or
// s3://bucket/prefix?endpoint=URL&region=R (endpoint for an S3-compatible
// server other than AWS, which is then addressed by path).
func Open(ctx context.Context, raw string) (Store, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("store %q: %v", raw, err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("store %q: a file store is a local directory: file:///dir (three slashes)", raw)
		}
		if u.RawQuery != "" {
			return nil, fmt.Errorf("store %q: a file store takes no options", raw)
		}
		return openDir(u.Path)
	case "s3":
		return openS3(ctx, u)
	}
	return nil, fmt.Errorf("store %q: the store is file:///dir or s3://bucket/prefix?endpoint=URL&region=R", raw)
}

// CheckKey refuses a key that is not a clean relative path: empty, with
// an empty, "." or ".." segment, absolute, or with a backslash or a NUL.
func CheckKey(key string) error {
	if key == "" {
		return errors.New("an empty key")
	}
	if strings.ContainsAny(key, "\\\x00") {
		return fmt.Errorf("key %q holds a backslash or a NUL", key)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("key %q is not a clean relative path", key)
		}
	}
	return nil
}

// checkPrefix is CheckKey for a prefix, which may be empty (the whole store).
func checkPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	return CheckKey(strings.TrimSuffix(prefix, "/"))
}

// under tells whether key is under prefix, by whole segments.
func under(key, prefix string) bool {
	prefix = strings.TrimSuffix(prefix, "/")
	return prefix == "" || key == prefix || strings.HasPrefix(key, prefix+"/")
}

// Join makes a key of its parts, as the store names a step's file.
func Join(parts ...string) string { return path.Join(parts...) }

// KeyOf is the key of the object uri names in s ("" and an error when uri
// is not one of s's: a file handed on through another store).
func KeyOf(s Store, uri string) (string, error) {
	base := strings.TrimSuffix(s.URI("x"), "x")
	key, ok := strings.CutPrefix(uri, base)
	if !ok {
		return "", fmt.Errorf("%s is not in this worker's store (%s...)", uri, base)
	}
	if err := CheckKey(key); err != nil {
		return "", fmt.Errorf("%s: %v", uri, err)
	}
	return key, nil
}
