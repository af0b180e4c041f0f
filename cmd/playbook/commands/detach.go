package commands

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"playbook/interpreter/contract"
	"playbook/runs"
)

// detached is how `run` and `retry` end on Ctrl-C with a server that
// outlives the command: the CLI stops following and the run goes on on the
// server (exit 130).
func detached(c *call, conn *connection, id string) error {
	msg := fmt.Sprintf("\nDetached from %s: the run continues. Follow it with `playbook events %s --follow%s`, cancel it with `playbook cancel %s%s`.", id, id, conn.reach, id, conn.reach)
	return &exitError{code: exitDetached, err: errors.New(msg), whole: true}
}

// cancelEmbedded is how `run` and `retry` end on Ctrl-C with the embedded
// in-memory server, which ends with the command and the run with it: the
// run is cancelled as `playbook cancel` cancels it (running steps
// cancelled, its cleanup steps run, then end decides) and followed to its
// end. A second Ctrl-C stops the server and the worker at once (exit 130).
func cancelEmbedded(c *call, conn *connection, wr client.WorkflowRun, p *progress) (*contract.Aggregate, error) {
	id := wr.GetID()
	fmt.Fprintf(c.stderr, "\nCancelling %s, as `playbook cancel` does: running steps are cancelled, its cleanup steps run, then end decides. "+
		"The embedded in-memory server ends with this command (Ctrl-C again to stop at once; use `playbook dev` for runs that outlive the command).\n", id)
	ctx, stop := signal.NotifyContext(context.WithoutCancel(c.ctx), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A run that ended meanwhile has nothing to cancel: it is followed to
	// its aggregate all the same.
	var ended *runs.EndedError
	if err := runs.Cancel(ctx, conn.client, conn.namespace, id, ctrlCReason); err != nil && !errors.As(err, &ended) && ctx.Err() == nil {
		return nil, fmt.Errorf("cannot cancel %s: %w", id, err)
	}
	agg, err := follow(ctx, conn.client, wr, p)
	if ctx.Err() != nil {
		fmt.Fprintf(c.stderr, "\nStopped %s at once: the embedded server and its worker stop, and the run with them.\n", id)
		go conn.Close()
		return nil, exitWith(exitDetached)
	}
	return agg, err
}

// ctrlCReason is the cancel reason a run cancelled by Ctrl-C records.
const ctrlCReason = "Ctrl-C on playbook run"

// startFailed explains a run that could not start: an ID in use by an open
// run is the user's input (exit 2), naming that run.
func startFailed(id, reach string, err error) error {
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return invalidf("a run with ID %s is still open (run %s): give another --id, or follow it with `playbook events %s --follow%s`", id, started.RunId, id, reach)
	}
	return fmt.Errorf("cannot start %s: %w", id, err)
}
