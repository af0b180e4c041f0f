package worker

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"playbook/runs"
)

// names records the workflow types a worker registers.
type names []string

func (n *names) RegisterWorkflowWithOptions(_ any, o workflow.RegisterOptions) {
	*n = append(*n, o.Name)
}

// Every workflow type a worker runs is one `upgrade-check` replays: a
// type left out (the triggers' registrations were) is never checked
// before an upgrade, though its runs live on the workers for months.
func TestUpgradeCheckKnowsEveryWorkflowType(t *testing.T) {
	var registered names
	RegisterWorkflow(&registered)
	require.NotEmpty(t, registered)
	for _, name := range registered {
		require.True(t, slices.Contains(runs.WorkflowTypes, name), "runs.WorkflowTypes lacks %s", name)
	}
}
