package commands

import "github.com/spf13/cobra"

// The commands' argument checks: a wrong count is a usage error (exit 2)
// that says what to give.

// exactArgs takes n arguments; give says what they are ("the RUN
// (workflow ID)").
func exactArgs(n int, give string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return invalidf("give %s", give)
		}
		return nil
	}
}

// someArgs takes one argument or more.
func someArgs(give string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) == 0 {
			return invalidf("give %s", give)
		}
		return nil
	}
}

// oneOrTwoArgs takes one argument and an optional second.
func oneOrTwoArgs(give string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) < 1 || len(args) > 2 {
			return invalidf("give %s", give)
		}
		return nil
	}
}

// noArgs takes flags only.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return invalidf("takes no arguments (flags only)")
	}
	return nil
}

// noCommand is the check of a command that only leads to others: an
// argument there is a command it does not have.
func noCommand(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return invalidf("no command %q (see `%s --help`)", args[0], cmd.CommandPath())
	}
	return nil
}
