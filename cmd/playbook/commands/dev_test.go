//go:build !noserver

package commands

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// dev serves a namespace and a task queue, with flags of its own over the
// connection flags of the same names; it reaches no other server.
func TestDevFlags(t *testing.T) {
	_, out, _ := cli(t, "dev", "--help")
	require.Contains(t, out, `--namespace string              namespace to create and serve (default "default")`)
	require.NotContains(t, out, "--address")
	code, _, errOut := cli(t, "dev", "--profile", "p")
	require.Equal(t, 2, code)
	require.Equal(t, "dev: unknown flag: --profile (see `playbook dev --help`)\n", errOut)
}
