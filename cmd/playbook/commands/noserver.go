//go:build noserver

package commands

import (
	"errors"

	"github.com/spf13/cobra"
)

// A worker-only build (`go build -tags noserver`, the container image's)
// links neither the Temporal server nor the Web UI: `dev` and the embedded
// server `run` starts when none is configured are not in it.
const noServerBuild = "this playbook build has no embedded Temporal server (built with -tags noserver)"

func devCommand() *cobra.Command {
	return offline(&cobra.Command{
		Use:   "dev",
		Short: "not in this build: " + noServerBuild,
		// Any of the full build's flags gets the same answer.
		DisableFlagParsing: true,
		RunE: action(func(*call) error {
			return errors.New(noServerBuild + "; use the full playbook binary, or `temporal server start-dev`")
		}),
	})
}

func startEmbedded(string, int) (embeddedServer, string, error) {
	return nil, "", errors.New("no Temporal server configured, and " + noServerBuild + ": set TEMPORAL_ADDRESS or --address")
}
