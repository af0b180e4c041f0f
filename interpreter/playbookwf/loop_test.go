package playbookwf

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

// A run from before the yields (pace) decides a long noop chain without
// yielding, as it ran; a new one yields and ends the same.
func TestLongChainWithAndWithoutYields(t *testing.T) {
	var b strings.Builder
	b.WriteString("metadata: {name: t}\nworkflow:\n")
	for i := range 250 {
		fmt.Fprintf(&b, "  - {step: s%d, tool: {kind: noop, result: %d}, next: s%d}\n", i, i, i+1)
	}
	b.WriteString("  - {step: s250, tool: {kind: noop, result: \"{{ steps.s249.result }}\"}}\n")
	for _, old := range []bool{false, true} {
		env := newEnv(t)
		if old {
			env.OnGetVersion(changePaceYields.ID, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
		}
		agg, err := execute(t, env, b.String())
		require.NoError(t, err)
		require.Equal(t, 249.0, agg.Steps["s250"].Result, "old %v", old)
	}
}
