package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"playbook/runs"
)

// Idempotent submits. A run's workflow ID is what Temporal keeps unique:
// `run --idempotency-key K` derives the ID from the playbook's name and K,
// and starts with a reuse policy that refuses the ID while any run of it,
// open or closed, is still known to the server; the refusal names that
// run, and the submit answers it. Exactly one of many submits with one key
// starts the run (the server decides, not a lock of ours). `--id-conflict
// use-existing` does the same for an explicit --id, with the default reuse
// policy: an open run with the ID is answered, a closed one does not stop a
// new run.

// The answers --id-conflict takes.
const (
	conflictFail        = "fail"
	conflictUseExisting = "use-existing"
)

// maxIdempotencyKey bounds a key: it is hashed into the ID, and shown with
// the run.
const maxIdempotencyKey = 512

// submitPolicy is what a submit does with a run that already has its ID.
type submitPolicy struct {
	key      string // --idempotency-key
	conflict string // --id-conflict
}

func (p *submitPolicy) flags(fs *pflag.FlagSet) {
	fs.StringVar(&p.key, "idempotency-key", "", "submit at most once per `KEY`: a run of this playbook submitted with KEY before (open, or closed and within the namespace's retention) is answered and followed instead of starting another; its ID is NAME-<digest of KEY>")
	fs.StringVar(&p.conflict, "id-conflict", conflictFail, "what --id does when an open run has that ID: `fail` (exit 2) or use-existing (follow that run)")
}

// check refuses flags that do not go together, before anything starts.
func (p *submitPolicy) check(id string) error {
	switch {
	case p.conflict != conflictFail && p.conflict != conflictUseExisting:
		return fmt.Errorf("--id-conflict %q: write fail or use-existing", p.conflict)
	case p.key != "" && id != "":
		return errors.New("--idempotency-key and --id both name the run: give one (the key's run ID is NAME-<digest of KEY>)")
	case p.conflict == conflictUseExisting && id == "":
		return errors.New("--id-conflict use-existing needs --id: a run without one gets a new random ID, which no other run has")
	case p.key != "" && (strings.TrimSpace(p.key) == "" || len(p.key) > maxIdempotencyKey || strings.ContainsFunc(p.key, unicode.IsControl)):
		return fmt.Errorf("--idempotency-key must be 1 to %d bytes of text without control characters", maxIdempotencyKey)
	}
	return nil
}

// runID is the workflow ID of the run a key names, "" without a key.
func (p *submitPolicy) runID(playbook string) string {
	if p.key == "" {
		return ""
	}
	return idempotentRunID(playbook, p.key)
}

// idempotentRunID is the workflow ID of the run of playbook that
// idempotency key key names: the name, then 16 hex digits of the key's
// SHA-256 (a key is any text; an ID names a log directory).
func idempotentRunID(playbook, key string) string {
	return playbook + "-" + runs.IDDigest(key)
}

// start starts a run of pb under p (runs.StartOnce); existing says that
// it did not, and wr is the run that had the ID already.
func (p *submitPolicy) start(ctx context.Context, conn *connection, s runs.Start) (wr client.WorkflowRun, existing bool, err error) {
	if p.key != "" {
		s.Details = "idempotency key: " + p.key
	}
	return runs.StartOnce(ctx, conn.client, conn.namespace, s, p.key != "", p.conflict == conflictUseExisting)
}
