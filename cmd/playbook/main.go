// Command playbook runs YAML playbooks as durable Temporal workflows.
package main

import (
	"os"
)

func main() {
	os.Exit(Main(os.Args, os.Stdout, os.Stderr))
}
