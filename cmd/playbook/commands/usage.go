package commands

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// help prints what a command does (Short), its details (Long, where it
// has them) and its usage.
func help(cmd *cobra.Command, _ []string) {
	w := cmd.OutOrStdout()
	fmt.Fprintln(w, cmd.Short)
	if cmd.Long != "" {
		fmt.Fprintf(w, "\n%s\n", cmd.Long)
	}
	fmt.Fprintf(w, "\n%s", cmd.UsageString())
}

// usage prints a command's usage: its command line or its commands, its
// own flags and, for one that talks to Temporal, the connection flags.
func usage(cmd *cobra.Command) error {
	var b strings.Builder
	b.WriteString("Usage:\n")
	leads := cmd.HasAvailableSubCommands()
	if leads {
		fmt.Fprintf(&b, "  %s COMMAND [flags]\n\nCommands:\n", cmd.CommandPath())
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() {
				fmt.Fprintf(&b, "  %-*s  %s\n", sub.NamePadding(), sub.Name(), sub.Short)
			}
		}
	} else {
		fmt.Fprintf(&b, "  %s\n", cmd.UseLine())
	}
	section(&b, "Flags", cmd.LocalNonPersistentFlags())
	switch {
	case !cmd.HasParent():
		section(&b, "Temporal connection flags (of the commands that talk to Temporal)", cmd.PersistentFlags())
	case !leads && !isOffline(cmd):
		section(&b, "Temporal connection flags", cmd.InheritedFlags())
	}
	if leads {
		fmt.Fprintf(&b, "\nSee `%s COMMAND --help` for a command's flags.\n", cmd.CommandPath())
	}
	_, err := fmt.Fprint(cmd.OutOrStderr(), b.String())
	return err
}

func section(b *strings.Builder, title string, flags *pflag.FlagSet) {
	if flags.HasAvailableFlags() {
		fmt.Fprintf(b, "\n%s:\n%s", title, flags.FlagUsages())
	}
}
