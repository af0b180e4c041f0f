package activities

import (
	"context"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

var _ = runs(runNoop)

// runNoop returns the step's rendered result. Runs since the noop change
// decide noop steps in the workflow; older runs, and a noop that retry_when
// polls, still come here.
func runNoop(_ *Activities, _ context.Context, _ contract.StepInput, toolSpec *spec.NoopTool, _ int) ToolResult {
	return ToolResult{Result: toolSpec.Result}
}
