package commands

import (
	"context"
	"os"

	"go.temporal.io/sdk/client"

	"playbook/internal/claims"
	"playbook/internal/store"
	"playbook/worker"
)

// useClaims says where the client finds a run's large values (the claims
// internal/claims leaves in a history), unless the command set it (worker,
// dev and mcp, which open their --store; mcp's is the workers' when given,
// by --store or $PLAYBOOK_STORE). The store is the embedded run's
// own when there is one, else $PLAYBOOK_STORE, else the default directory
// (worker.DefaultStore). The client also keeps its own payloads over 256
// KiB there, and the runs it starts keep large values (contract.Input's
// LargeValues), when it knows its store is the workers': the embedded
// run's, $PLAYBOOK_STORE given, or the `playbook dev` found on this machine
// with the default store. Otherwise it only reads claims: what it sends
// stays in the history, as without a store.
func (c *connection) useClaims(opts *client.Options, embedded store.Store) {
	switch {
	case opts.ExternalStorage.Drivers != nil:
		c.largeValues = claims.Writes(*opts)
	case embedded != nil:
		c.largeValues = true
		claims.Use(opts, claims.Open(embedded), true)
	default:
		c.largeValues = os.Getenv("PLAYBOOK_STORE") != "" || c.localDev
		claims.Use(opts, lazyStore(worker.DefaultStore()), c.largeValues)
	}
}

// lazyStore opens the store raw names when a claim is first met.
func lazyStore(raw string) claims.Opener {
	return func() (store.Store, error) { return store.Open(context.Background(), raw) }
}

// abandon undoes what a connection brought up before its client dialed:
// the embedded server and its store.
func (c *connection) abandon() {
	if c.embedded != nil {
		c.embedded.Stop()
	}
	if c.storeDir != "" {
		_ = os.RemoveAll(c.storeDir)
	}
}

// storeClaims has the client read claims from st, the command's --store
// (raw), and keep its own large payloads there when the store was named
// (--store other than the default, or $PLAYBOOK_STORE), as the workers'.
func storeClaims(st store.Store, raw string) func(*client.Options) {
	named := raw != worker.DefaultStore() || os.Getenv("PLAYBOOK_STORE") != ""
	return func(o *client.Options) { claims.Use(o, claims.Open(st), named) }
}

// workersStore opens the workers' store: raw (a command's --store), else
// the one the client knows for the workers' ($PLAYBOOK_STORE, or the
// local `playbook dev`'s default, useClaims); nil when it knows none.
func (c *connection) workersStore(ctx context.Context, raw string) (store.Store, error) {
	if raw == "" && c.largeValues {
		raw = worker.DefaultStore()
	}
	if raw == "" {
		return nil, nil
	}
	return openStore(ctx, raw)
}
