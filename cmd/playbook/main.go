// Command playbook runs YAML playbooks as durable workflows on Temporal.
package main

import (
	"context"
	"fmt"
	"os"
	"slices"

	"playbook/cmd/playbook/commands"
	"playbook/internal/hideenv"
)

// runsSteps are the commands whose process may run steps (a worker, or
// the embedded one `run` and `retry` bring up): their secrets are kept out
// of what a step can read, and so are the descriptors it inherited
// (hideenv).
var runsSteps = []string{"worker", "dev", "run", "retry"}

func main() {
	if slices.Contains(runsSteps, commands.CommandName(os.Args[1:])) {
		if err := hideenv.CloseInherited(); err != nil {
			fmt.Fprintln(os.Stderr, "playbook: steps could inherit this process's descriptors:", err)
		}
		if err := hideenv.Hide(); err != nil {
			fmt.Fprintln(os.Stderr, "playbook: steps could read this process's environment:", err)
		}
	}
	os.Exit(commands.Main(context.Background(), os.Args, os.Stdout, os.Stderr))
}
