package commands

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/submit"
)

func validateCommand() *cobra.Command {
	return offline(&cobra.Command{
		Use:   "validate FILE...",
		Short: "check playbooks without running them",
		Args:  someArgs("one or more playbook files"),
		RunE: action(func(c *call) error {
			bad := 0
			for _, path := range c.args {
				pb, _, err := load(path)
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

// load reads, parses and validates a playbook and its sub-playbooks, and
// freezes them into a workflow input. Its errors are one line naming file,
// line and step.
func load(path string) (*spec.Playbook, contract.Input, error) {
	b, err := submit.LoadBundle(path, submit.ReadPlaybook)
	if err != nil {
		return nil, contract.Input{}, err
	}
	return b.Root, frozen(path, b), nil
}

// printWarnings prints what the checks of a submission point out without
// refusing the playbook, one line each.
func printWarnings(w io.Writer, pb *spec.Playbook) {
	for _, line := range pb.Warnings {
		fmt.Fprintln(w, line)
	}
}

// frozen is the workflow's input for a bundle loaded from path.
func frozen(path string, b *submit.Bundle) contract.Input {
	in := contract.Input{File: path, BaseDir: filepath.Dir(b.RootPath), Source: b.Files[b.RootPath]}
	if len(b.Files) > 1 {
		in.Files = b.Files
	}
	in.FileDigests = submit.FileDigests(b.Root, in.BaseDir, in.Files)
	return in
}

func unwrapPathError(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}
