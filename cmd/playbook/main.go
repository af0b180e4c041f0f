// Command playbook runs YAML playbooks as durable workflows on Temporal.
package main

import (
	"context"
	"os"

	"playbook/cmd/playbook/commands"
)

func main() {
	os.Exit(commands.Main(context.Background(), os.Args, os.Stdout, os.Stderr))
}
