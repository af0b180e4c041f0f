package commands

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.temporal.io/api/serviceerror"
)

// detached is how `run` and `retry` end on Ctrl-C: the CLI stops following
// and the run goes on on the server (exit 130). On the embedded in-memory
// server, which ends with this command, the run ends too: it says so at
// once, stops the server and worker, and a second Ctrl-C stops at once.
func detached(c *call, conn *connection, id string) error {
	if conn.embedded == nil {
		msg := fmt.Sprintf("\nDetached from %s: the run continues. Follow it with `playbook events %s --follow%s`, cancel it with `playbook cancel %s%s`.", id, id, conn.reach, id, conn.reach)
		return &exitError{code: exitDetached, err: errors.New(msg), whole: true}
	}
	fmt.Fprintf(c.stderr, "\nStopped following %s. The embedded in-memory server ends with this command, and the run with it: stopping its running steps and the server (Ctrl-C again to stop at once; use `playbook dev` for runs that outlive the command).\n", id)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	closed := make(chan struct{})
	go func() {
		conn.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-sig:
	}
	return exitWith(exitDetached)
}

// startFailed explains a run that could not start: an ID in use by an open
// run is the user's input (exit 2), naming that run.
func startFailed(id, reach string, err error) error {
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return invalidf("a run with ID %s is still open (run %s): give another --id, or follow it with `playbook events %s --follow%s`", id, started.RunId, id, reach)
	}
	return fmt.Errorf("cannot start %s: %w", id, err)
}
