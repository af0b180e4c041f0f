package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/cmd/playbook/commands"
)

// The commands whose secrets are hidden are found wherever the root's
// flags put them.
func TestCommandName(t *testing.T) {
	for line, want := range map[string]string{
		"worker --task-queue q":                "worker",
		"--address 127.0.0.1:7233 run f.yaml":  "run",
		"--address=127.0.0.1:7233 dev":         "dev",
		"--namespace ns --profile p retry RUN": "retry",
		"status RUN":                           "status",
		"schedule create --cron x f.yaml":      "schedule",
		"--version":                            "",
	} {
		require.Equal(t, want, commands.CommandName(strings.Fields(line)), line)
	}
	for _, name := range runsSteps {
		require.Equal(t, name, commands.CommandName([]string{name}), "%s is a command", name)
	}
}
