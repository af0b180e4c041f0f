package commands

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"playbook/interpreter/spec"
	"playbook/runs"
)

func validateCommand() *cobra.Command {
	return offline(&cobra.Command{
		Use:   "validate FILE...",
		Short: "check playbooks without running them",
		Args:  someArgs("one or more playbook files"),
		RunE: action(func(c *call) error {
			bad := 0
			for _, path := range c.args {
				pb, _, err := runs.Load(path)
				if err != nil {
					fmt.Fprintln(c.stderr, err)
					bad++
					continue
				}
				printWarnings(c.stderr, pb)
				fmt.Fprintf(c.stdout, "%s: ok (%s, %s)\n", path, pb.Name, countOf(len(pb.Steps)-1, "step"))
			}
			if bad > 0 {
				return exitWith(exitInvalid)
			}
			return nil
		}),
	})
}

// printWarnings prints what the checks of a submission point out without
// refusing the playbook, one line each.
func printWarnings(w io.Writer, pb *spec.Playbook) {
	for _, line := range pb.Warnings {
		fmt.Fprintln(w, line)
	}
}
