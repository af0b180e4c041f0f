package commands

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/pflag"
)

// printer is how a command prints its result: as text, or with --json as
// one indented JSON document on stdout.
type printer struct {
	json bool
}

// flag adds --json to a command's flags; usage says what it prints.
func (p *printer) flag(fs *pflag.FlagSet, usage string) {
	fs.BoolVar(&p.json, "json", false, usage)
}

// print writes v to out as JSON with --json, else what text writes.
func (p *printer) print(out io.Writer, v any, text func(io.Writer)) error {
	if !p.json {
		text(out)
		return nil
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, string(b))
	return err
}

// progress is where a command that follows a run writes its progress:
// stdout, or stderr with --json so that stdout carries only the result.
func (p *printer) progress(c *call) io.Writer {
	if p.json {
		return c.stderr
	}
	return c.stdout
}
