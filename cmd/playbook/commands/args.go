package commands

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// flagsFirst reorders a command line so that the command's flags come before
// its positional arguments: urfave/cli stops reading flags at the first
// positional one, and `playbook status RUN --json` must work as well as
// `playbook status --json RUN`. It knows which flags take a value from the
// command's own flag list, so it works for every command, including ones
// added later. Everything after `--` stays positional.
func flagsFirst(commands []*cli.Command, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	rest := args[1:]
	var cmd *cli.Command
	for len(rest) > 0 {
		c := findCommand(commands, rest[0])
		if c == nil {
			break
		}
		out, rest, cmd, commands = append(out, rest[0]), rest[1:], c, c.Subcommands
		if len(c.Subcommands) == 0 {
			break
		}
	}
	if cmd == nil || len(cmd.Subcommands) > 0 {
		return append(out, rest...)
	}
	takesValue := map[string]bool{}
	for _, f := range cmd.Flags {
		takes := true
		if d, ok := f.(cli.DocGenerationFlag); ok {
			takes = d.TakesValue()
		}
		for _, name := range f.Names() {
			takesValue[name] = takes
		}
	}
	var flags, positional []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			return append(append(append(out, flags...), "--"), append(positional, rest[i+1:]...)...)
		case len(a) > 1 && a[0] == '-':
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && takesValue[name] && i+1 < len(rest) {
				i++
				flags = append(flags, rest[i])
			}
		default:
			positional = append(positional, a)
		}
	}
	return append(append(out, flags...), positional...)
}

func findCommand(commands []*cli.Command, name string) *cli.Command {
	for _, c := range commands {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// wholeValues is a repeatable flag whose values are kept whole: unlike a
// string slice flag, it never splits a value on commas (`--set 'who=Smith,
// John'` is one value).
type wholeValues []string

func (w *wholeValues) Set(v string) error {
	*w = append(*w, v)
	return nil
}

func (w *wholeValues) String() string { return strings.Join(*w, " ") }

// repeatable returns the values given to a wholeValues flag.
func repeatable(c *cli.Context, name string) []string {
	if w, ok := c.Generic(name).(*wholeValues); ok {
		return *w
	}
	return nil
}
