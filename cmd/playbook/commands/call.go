package commands

import (
	"context"
	"io"

	"github.com/spf13/cobra"
)

// call is one run of a command's action: its context, its arguments and
// where it writes.
type call struct {
	ctx    context.Context
	args   []string
	stdout io.Writer // the command's output
	stderr io.Writer // progress, warnings and logs
}

// action is a command's RunE: do's error leaves with its exit code (see
// failure).
func action(do func(c *call) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c := &call{ctx: cmd.Context(), args: args, stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr()}
		if !rawOutput[cmd.Name()] {
			c.stdout, c.stderr = &controlsEscaped{w: c.stdout}, &controlsEscaped{w: c.stderr}
		}
		err := do(c)
		if err == nil {
			return nil
		}
		return failure(err)
	}
}
