package commands

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// refuseEmptyFlags refuses a text flag given with an empty value, such
// as --task-queue "$UNSET": it would mean the flag's default, or nothing,
// where the user meant to say something. Exit 2, before anything is read
// or started.
func refuseEmptyFlags(cmd *cobra.Command) error {
	var empty *pflag.Flag
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if empty == nil && f.Value.Type() == "string" && f.Value.String() == "" {
			empty = f
		}
	})
	if empty != nil {
		return invalidf("--%s is empty: give a value, or leave the flag out", empty.Name)
	}
	return nil
}
