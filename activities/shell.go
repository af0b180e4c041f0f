package activities

import (
	"context"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

var _ = runs((*Activities).runShell)

// runShell runs `/bin/sh -c command`. Its result is {exit_code, stdout,
// stderr, json}: tails of the output, and stdout parsed when it is JSON.
func (a *Activities) runShell(ctx context.Context, in contract.StepInput, toolSpec *spec.ShellTool, attempt int) ToolResult {
	run, err := a.runProcess(ctx, in, attempt, process{argv: []string{"/bin/sh", "-c", toolSpec.Command}, workdir: toolSpec.Workdir, env: toolSpec.Env})
	if err != nil {
		return ToolResult{Err: err}
	}
	if run.exitCode != 0 || ctx.Err() != nil {
		return exitFailure(run)
	}
	code := run.exitCode
	return ToolResult{ExitCode: &code, Result: map[string]any{
		"exit_code": code, "stdout": run.stdoutTail(), "stderr": run.stderrTail(), "json": run.stdoutJSON(),
	}}
}
