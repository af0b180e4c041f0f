package runs

import (
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"
)

// The errors a front end tells apart: the CLI maps each to its exit code in
// one place (commands/exit.go), the MCP server to a tool error. Each keeps
// the message of what went wrong, so that wrapping changes no word a user
// reads.

// NotFoundError: no run has that ID.
type NotFoundError struct {
	Run string
	Err error
}

func (e *NotFoundError) Error() string { return e.Err.Error() }
func (e *NotFoundError) Unwrap() error { return e.Err }

// EndedError: the run has already ended, so what was asked of it (cancel,
// drain) has nothing to act on; Outcome says how it ended.
type EndedError struct {
	Run, Outcome, Nothing string
}

func (e *EndedError) Error() string {
	return e.Run + " already ended: " + e.Outcome + "; " + e.Nothing
}

// NotIndexedError: the namespace lacks playbook's search attributes, so
// runs cannot be listed.
type NotIndexedError struct{}

func (e *NotIndexedError) Error() string {
	return "this namespace lacks playbook's search attributes; run `playbook setup` once"
}

// UnreachableError: Temporal cannot be reached at all, told apart from a
// run that failed by its own exit code.
type UnreachableError struct{ Msg string }

func (e *UnreachableError) Error() string { return e.Msg }

// RefusedError: the run refused what was asked (a classification of a
// step that is not pending, an approval of a step that does not wait):
// Err is the run's own answer, and the message its words.
type RefusedError struct {
	Run string
	Err error
}

func (e *RefusedError) Error() string {
	var app *temporal.ApplicationError
	if errors.As(e.Err, &app) {
		return app.Message()
	}
	return e.Err.Error()
}
func (e *RefusedError) Unwrap() error { return e.Err }

// notFound is err as a NotFoundError when the server says no run has the
// ID, else err.
func notFound(run string, err error) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return &NotFoundError{Run: run, Err: err}
	}
	return err
}

// InvalidError: what was asked cannot be done as asked (a retry of a run
// still running, of an unknown step, with a workload value of the wrong
// type): the caller's mistake, and nothing was started.
type InvalidError struct{ Err error }

func (e *InvalidError) Error() string { return e.Err.Error() }
func (e *InvalidError) Unwrap() error { return e.Err }

// NotStartedError: the server did not start the run ID (an ID in use by
// an open run, no server).
type NotStartedError struct {
	ID  string
	Err error
}

func (e *NotStartedError) Error() string { return fmt.Sprintf("cannot start %s: %v", e.ID, e.Err) }
func (e *NotStartedError) Unwrap() error { return e.Err }
