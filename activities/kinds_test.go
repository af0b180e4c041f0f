package activities

import (
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/spec"
)

// Every tool kind of the core that runs as an activity has its runner here:
// a kind added to the core without one fails this test, not a run.
func TestEveryToolKindHasARunner(t *testing.T) {
	n := 0
	for _, kind := range spec.ToolKinds() {
		if spec.RunsAnActivity(kind) {
			require.Contains(t, runners, kind, "activities/ has no runner for tool kind %q", kind)
			n++
		}
	}
	require.Len(t, runners, n, "a runner for a kind the core does not run as an activity")
}
