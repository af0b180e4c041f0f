package activities

import (
	"context"

	"playbook/interpreter"
)

var _ = runs(runNoop)

// runNoop returns the step's rendered result. Runs since the noop change
// decide noop steps in the workflow; older runs, and a noop that retry_when
// polls, still come here.
func runNoop(_ *Activities, _ context.Context, _ interpreter.StepInput, toolSpec *interpreter.NoopTool, _ int) ToolResult {
	return ToolResult{Result: toolSpec.Result}
}
