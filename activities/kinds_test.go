package activities

import (
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/spec"
)

// Every tool kind of the core that runs as an activity has its runner here:
// a kind added to the core without one fails this test, not a run.
func TestEveryToolKindHasARunner(t *testing.T) {
	for _, kind := range spec.ToolKinds() {
		if kind == "playbook" || kind == spec.FailKind { // a child workflow; an error raised in the workflow
			continue
		}
		require.Contains(t, runners, kind, "activities/ has no runner for tool kind %q", kind)
	}
	require.Len(t, runners, len(spec.ToolKinds())-2, "a runner for a kind the core does not know")
}
