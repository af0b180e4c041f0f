package commands

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"go.temporal.io/api/serviceerror"

	"playbook/runs"
)

// Exit codes of the CLI (docs/CLI.md's table).
const (
	exitOK          = 0   // the run completed; the command did what it was asked
	exitFailed      = 1   // the run failed, or the command could not do its work
	exitInvalid     = 2   // usage or invalid input: nothing was started
	exitCancelled   = 3   // the run ended cancelled
	exitUnreachable = 4   // Temporal cannot be reached
	exitEnded       = 5   // the run already ended (cancel: nothing to cancel)
	exitDetached    = 130 // Ctrl-C: the CLI stopped following; the run goes on
)

// exitError is an error with the exit code it ends the CLI with. Any other
// error a command returns is a failure (exit 1), and one cobra returns (a
// flag or an argument it cannot take) a usage error (exit 2).
type exitError struct {
	code int
	// err is what went wrong; nil exits with code and prints nothing (the
	// command has said it, or the code is the answer: a run's outcome).
	err error
	// whole says err's message names its own subject ("file.yaml:5: ...")
	// and is printed as it is, not after the command's name.
	whole bool
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// invalid is the user's mistake: a flag, an argument or an input that
// cannot be taken; nothing was started (exit 2).
func invalid(err error) error { return &exitError{code: exitInvalid, err: err} }

func invalidf(format string, a ...any) error { return invalid(fmt.Errorf(format, a...)) }

// invalidFile is invalid input whose message names the file it is about
// (a playbook's "file:line: step ..."), printed as it is.
func invalidFile(err error) error { return &exitError{code: exitInvalid, err: err, whole: true} }

// exitWith ends the CLI with code, printing nothing.
func exitWith(code int) error {
	if code == exitOK {
		return nil
	}
	return &exitError{code: code}
}

// failure is err with its exit code: its own when it has one, 4 when
// Temporal cannot be reached, 5 when the run has already ended, 2 when
// the run refused what was asked or it cannot be done as asked, else 1.
// The one place the client side's typed errors (runs/errors.go) become
// exit codes.
func failure(err error) *exitError {
	if e, ok := err.(*exitError); ok {
		return e
	}
	var e *exitError
	var u *runs.UnreachableError
	var ended *runs.EndedError
	var refused *runs.RefusedError
	var mistake *runs.InvalidError
	var ns *serviceerror.NamespaceNotFound
	var missing *runs.NotFoundError
	switch {
	case errors.As(err, &e):
		return &exitError{code: e.code, err: err, whole: e.whole}
	case errors.As(err, &u):
		return &exitError{code: exitUnreachable, err: err}
	case errors.As(err, &ended):
		return &exitError{code: exitEnded, err: err}
	case errors.As(err, &refused):
		// What the run refused (its validator's words) was the user's
		// mistake: nothing changed.
		return &exitError{code: exitInvalid, err: err}
	case errors.As(err, &mistake):
		// What was asked cannot be done as asked: nothing was started.
		return &exitError{code: exitInvalid, err: err}
	case errors.As(err, &ns):
		// --namespace, TEMPORAL_NAMESPACE or the profile named it: usage.
		return &exitError{code: exitInvalid, err: err}
	case errors.As(err, &missing) && missing.Run != "":
		// The server's words, and what they mean to the person.
		return &exitError{code: exitFailed, err: fmt.Errorf("%w (the server knows no run %s in this namespace: a mistyped ID, or its retention removed it)", err, missing.Run)}
	}
	return &exitError{code: exitFailed, err: err}
}

// report prints the error the CLI ended with, after the command's name
// ("status: ...") unless it names its own subject, and returns the exit
// code. Every error an action returns is an *exitError (see action); any
// other is cobra's own: a flag, an argument or a command it cannot take.
func report(cmd *cobra.Command, err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	e, ok := err.(*exitError)
	if !ok {
		e = &exitError{code: exitInvalid, err: fmt.Errorf("%v (see `%s --help`)", err, cmd.CommandPath())}
	}
	if e.err != nil {
		msg := e.err.Error()
		if !e.whole {
			msg = commandName(cmd) + ": " + msg
		}
		fmt.Fprintln(stderr, msg)
	}
	return e.code
}

// commandName is how messages name a command: "status", "schedule create";
// "playbook" for the root.
func commandName(cmd *cobra.Command) string {
	if !cmd.HasParent() {
		return cmd.Name()
	}
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}
