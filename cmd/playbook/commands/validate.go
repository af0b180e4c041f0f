package commands

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"playbook/interpreter"
	"playbook/interpreter/playbookwf"
)

func validateCommand() *cli.Command {
	return &cli.Command{
		Name:      "validate",
		Usage:     "check playbooks without running them",
		ArgsUsage: "FILE...",
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return cli.Exit("validate: give one or more playbook files", exitInvalid)
			}
			bad := 0
			for _, path := range c.Args().Slice() {
				pb, _, err := load(path)
				if err != nil {
					fmt.Fprintln(c.App.ErrWriter, err)
					bad++
					continue
				}
				fmt.Fprintf(c.App.Writer, "%s: ok (%s, %d steps)\n", path, pb.Name, len(pb.Steps)-1)
			}
			if bad > 0 {
				return cli.Exit("", exitInvalid)
			}
			return nil
		},
	}
}

// load reads, parses and validates a playbook file, and freezes it into a
// workflow input. Its errors are one line naming file, line and step.
func load(path string) (*interpreter.Playbook, playbookwf.Input, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, playbookwf.Input{}, &interpreter.Error{File: path, Msg: "cannot read: " + unwrapPathError(err)}
	}
	pb, err := interpreter.Parse(path, src)
	if err != nil {
		return nil, playbookwf.Input{}, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, playbookwf.Input{}, err
	}
	return pb, playbookwf.Input{File: path, BaseDir: filepath.Dir(abs), Source: string(src)}, nil
}

func unwrapPathError(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}
