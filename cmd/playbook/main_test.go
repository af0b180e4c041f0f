package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCommand(t *testing.T) {
	for line, want := range map[string]string{
		"worker --task-queue q":                "worker",
		"--address 127.0.0.1:7233 run f.yaml":  "run",
		"--address=127.0.0.1:7233 dev":         "dev",
		"--namespace ns --profile p retry RUN": "retry",
		"status RUN":                           "status",
		"--version":                            "",
	} {
		require.Equal(t, want, command(strings.Fields(line)), line)
	}
}
