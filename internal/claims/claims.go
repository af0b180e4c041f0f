// Package claims keeps a run's large values in its store (the claim-check
// pattern): the Temporal SDK's external storage hands every payload over
// Threshold to the driver here, which writes it to the run's store and
// leaves in the history a claim naming it; every reader of the history (a
// worker replaying the run, the CLI's status, the MCP server) gets the
// value back from the same store.
//
// A claim is content-addressed: its key is the sha256 of the payload, under
// the run's workflow ID (_claims/RUN/SHA256), so that the same value writes
// the same object however often it is sent, and a read checks what it got.
package claims

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"sync"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/proxy"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"playbook/internal/store"
)

// Threshold is the size of a payload, encoded, from which it is kept in
// the store rather than in the history.
const Threshold = 256 << 10

// Prefix is the top of the store's keys that hold claims; a run's files
// are under its workflow ID, beside it.
const Prefix = "_claims"

// driverName names the driver in every claim: it never changes, or the
// claims written before could not be read.
const driverName = "playbook-store"

// Opener opens the store on first use (a client that may never meet a
// claim does not make a directory for nothing).
type Opener func() (store.Store, error)

// Use makes the client's payloads over Threshold go to the store open
// opens, and its claims be read from it. With write false, the client
// reads claims and writes none: its large payloads stay in the history, as
// without a store (a CLI that was not told where the workers' store is).
func Use(opts *client.Options, open Opener, write bool) {
	d := &driver{open: open}
	opts.ExternalStorage = converter.ExternalStorage{
		Drivers:              []converter.StorageDriver{d},
		PayloadSizeThreshold: Threshold,
		DriverSelector:       selector{d: d, write: write},
	}
}

// Writes tells whether the client opts configure keeps its large payloads
// in a store (Use with write), not only reads claims.
func Writes(opts client.Options) bool {
	s, ok := opts.ExternalStorage.DriverSelector.(selector)
	return ok && s.write
}

// Open is an Opener of the store already open.
func Open(st store.Store) Opener { return func() (store.Store, error) { return st, nil } }

type selector struct {
	d     *driver
	write bool
}

func (s selector) SelectDriver(converter.StorageDriverSelectContext, *commonpb.Payload) (converter.StorageDriver, error) {
	if !s.write {
		return nil, nil
	}
	return s.d, nil
}

// driver is the SDK's StorageDriver over a store.
type driver struct {
	open Opener
	once sync.Once
	st   store.Store
	err  error
}

func (d *driver) Name() string { return driverName }
func (d *driver) Type() string { return driverName }

func (d *driver) store() (store.Store, error) {
	d.once.Do(func() { d.st, d.err = d.open() })
	return d.st, d.err
}

// Key is where a payload of the run whose sum is sha256 (hex) is kept.
func Key(run, sum string) string {
	seg := url.PathEscape(run)
	if store.CheckKey(seg) != nil {
		seg = "_"
	}
	return store.Join(Prefix, seg, sum)
}

func (d *driver) Store(ctx converter.StorageDriverStoreContext, payloads []*commonpb.Payload) ([]converter.StorageDriverClaim, error) {
	st, err := d.store()
	if err != nil {
		return nil, err
	}
	run := ""
	if w, ok := ctx.Target.(converter.StorageDriverWorkflowInfo); ok {
		run = w.WorkflowID
	}
	out := make([]converter.StorageDriverClaim, len(payloads))
	for i, p := range payloads {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(p)
		if err != nil {
			return nil, err
		}
		h := sha256.Sum256(b)
		sum := hex.EncodeToString(h[:])
		key := Key(run, sum)
		err = ctx.GetLimiter().Permit(ctx.Context, p, func() error {
			return st.Put(ctx.Context, key, bytes.NewReader(b), int64(len(b)), sum)
		})
		if err != nil {
			return nil, fmt.Errorf("keeping a large value (%d bytes) in the store: %w", len(b), err)
		}
		out[i] = converter.StorageDriverClaim{ClaimData: map[string]string{"key": key, "sha256": sum, "bytes": strconv.Itoa(len(b))}}
	}
	return out, nil
}

func (d *driver) Retrieve(ctx converter.StorageDriverRetrieveContext, cl []converter.StorageDriverClaim) ([]*commonpb.Payload, error) {
	st, err := d.store()
	if err != nil {
		return nil, &UnreadableError{Err: err}
	}
	out := make([]*commonpb.Payload, len(cl))
	for i, c := range cl {
		key, sum := c.ClaimData["key"], c.ClaimData["sha256"]
		var b []byte
		err := ctx.GetLimiter().Permit(ctx.Context, c, func() error {
			var err error
			b, err = read(ctx, st, key, sum)
			return err
		})
		if err != nil {
			return nil, &UnreadableError{Key: key, URI: st.URI(key), Err: err}
		}
		p := &commonpb.Payload{}
		if err := proto.Unmarshal(b, p); err != nil {
			return nil, &UnreadableError{Key: key, URI: st.URI(key), Err: err}
		}
		out[i] = p
	}
	return out, nil
}

// read reads the object key whole and checks its sha256.
func read(ctx converter.StorageDriverRetrieveContext, st store.Store, key, sum string) ([]byte, error) {
	if err := store.CheckKey(key); err != nil {
		return nil, err
	}
	r, _, err := st.Get(ctx.Context, key)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	h := sha256.Sum256(b)
	if got := hex.EncodeToString(h[:]); got != sum {
		return nil, &store.Mismatch{Key: key, WantBytes: int64(len(b)), Bytes: int64(len(b)), WantSHA256: sum, SHA256: got}
	}
	return b, nil
}

// UnreadableError is a claim whose value the store does not give back:
// not there (another store, or removed by files gc), or not what was
// written.
type UnreadableError struct {
	Key, URI string
	Err      error
}

func (e *UnreadableError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("this run keeps large values in its store, which cannot be opened: %v", e.Err)
	}
	why := e.Err.Error()
	if errors.Is(e.Err, store.ErrNotFound) {
		why = "not there"
	}
	return fmt.Sprintf("this run keeps a large value in its store, at %s: %s; give this command the store the workers keep it in: PLAYBOOK_STORE=URL, their --store (replay, files and mcp take --store too)", e.URI, why)
}

func (e *UnreadableError) Unwrap() error { return e.Err }

// referenceType is the message type of the payload the SDK leaves in a
// history in place of a value a driver stored.
var referenceType = string((*sdkpb.ExternalStorageReference)(nil).ProtoReflect().Descriptor().FullName())

// HoldsClaims tells whether a message (a history) holds a claim in place
// of a value: reading it needs the store the value was kept in.
func HoldsClaims(m proto.Message) bool {
	found := false
	_ = proxy.VisitPayloads(context.Background(), m, proxy.VisitPayloadsOptions{
		Visitor: func(_ *proxy.VisitPayloadsContext, ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
			for _, p := range ps {
				found = found || string(p.GetMetadata()[converter.MetadataMessageType]) == referenceType
			}
			return ps, nil
		},
		SkipSearchAttributes: true,
	})
	return found
}
