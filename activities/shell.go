package activities

import "context"

type shellSpec struct {
	Command string         `json:"command"`
	Env     map[string]any `json:"env"`
	Workdir string         `json:"workdir"`
}

// runShell runs `/bin/sh -c command`. Its result is {exit_code, stdout,
// stderr, json}: tails of the output, and stdout parsed when it is JSON.
func (a *Activities) runShell(ctx context.Context, in StepInput, attempt int) Outcome {
	var spec shellSpec
	if err := decodeSpec(in.Spec, &spec); err != nil {
		return failure("tool_error", "shell spec: "+err.Error(), nil)
	}
	run, err := a.runProcess(ctx, in, attempt, process{argv: []string{"/bin/sh", "-c", spec.Command}, workdir: spec.Workdir, env: spec.Env})
	if err != nil {
		return Outcome{Err: err}
	}
	if run.exitCode != 0 || ctx.Err() != nil {
		return exitFailure(run)
	}
	code := run.exitCode
	return Outcome{ExitCode: &code, Result: map[string]any{
		"exit_code": code, "stdout": run.stdoutTail(), "stderr": run.stderrTail(), "json": parseJSONFile(run.stdoutPath),
	}}
}
