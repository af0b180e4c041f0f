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
// of what a step can read (hideenv).
var runsSteps = []string{"worker", "dev", "run", "retry"}

func main() {
	if slices.Contains(runsSteps, command(os.Args[1:])) {
		if err := hideenv.Hide(); err != nil {
			fmt.Fprintln(os.Stderr, "playbook: steps could read this process's environment:", err)
		}
	}
	os.Exit(commands.Main(context.Background(), os.Args, os.Stdout, os.Stderr))
}

// valueFlags are the root's flags that take a value, which a command line
// may give before the command (`playbook --address X worker`).
var valueFlags = []string{"--address", "--namespace", "--profile", "--task-queue"}

// command is the command a command line names: its first word that is
// neither a flag nor the value of one of the root's flags. A guess that
// misses only leaves the process as it is.
func command(args []string) string {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case slices.Contains(valueFlags, a):
			i++ // its value
		case len(a) > 0 && a[0] != '-':
			return a
		}
	}
	return ""
}
