package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

var _ = runs((*Activities).runPython)

// pythonRunner loads the step's code, calls main(**args) and writes what it
// returns as JSON; an exception is written with its traceback instead. The
// code is compiled under its file's name so tracebacks quote its lines.
const pythonRunner = `import json, math, os, sys, traceback
env = os.environ
def plain(v):
    # NaN and the infinities, which JSON cannot hold, as their str().
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, dict):
        # Keys JSON cannot hold (a tuple, a date, a float) as their str().
        return {k if isinstance(k, (str, int, bool)) or k is None else str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v
try:
    with open(env["PLAYBOOK_PY_ARGS"]) as f:
        args = json.load(f)
    ns = {"__name__": "__playbook_step__"}
    with open(env["PLAYBOOK_PY_CODE"]) as f:
        exec(compile(f.read(), env["PLAYBOOK_PY_CODE"], "exec"), ns)
    if not callable(ns.get("main")):
        raise NameError("the step's code defines no main(**args)")
    result = ns["main"](**args)
    with open(env["PLAYBOOK_PY_RESULT"], "w") as f:
        json.dump(plain(result), f, default=str, allow_nan=False)
except SystemExit:
    raise
except BaseException as e:
    # The step's own frames: the runner's (the one that called main, or
    # compiled the code) are left out.
    tb = "".join(traceback.format_exception(type(e), e, e.__traceback__.tb_next))
    # In the attempt's stderr log too, as python itself would print it.
    sys.stderr.write(tb)
    sys.stderr.flush()
    with open(env["PLAYBOOK_PY_EXCEPTION"], "w") as f:
        json.dump({"exception": type(e).__name__, "message": str(e), "traceback": tb}, f)
    sys.exit(1)
`

// runPython runs the step's code with the machine's python3. The result is
// what main returns; a raised exception is a `python_exception` error with
// the traceback in its details; sys.exit(N) is an exit code like a shell's.
func (a *Activities) runPython(ctx context.Context, in contract.StepInput, toolSpec *spec.PythonTool, attempt int) ToolResult {
	python, err := exec.LookPath("python3")
	if err != nil {
		return failure(contract.ErrTool, "python3 is not on this worker's PATH: install Python 3 where the worker runs", nil)
	}
	if toolSpec.Args == nil {
		toolSpec.Args = spec.Values{}
	}
	dir, dirErr := a.attemptLogDir(in)
	if dirErr != nil {
		return ToolResult{Err: dirErr}
	}
	file := func(suffix string) string { return filepath.Join(dir, fmt.Sprintf("attempt-%d.%s", attempt, suffix)) }
	codeFile, argsFile, resultFile, excFile := file("py"), file("args.json"), file("result.json"), file("exception.json")
	argsJSON, err := json.Marshal(toolSpec.Args)
	if err != nil {
		return failure(contract.ErrTool, "python args: "+err.Error(), nil)
	}
	for path, content := range map[string][]byte{codeFile: []byte(toolSpec.Code), argsFile: argsJSON} {
		if err := os.WriteFile(path, content, 0o600); err != nil {
			return ToolResult{Err: logFileFailure(a.LogDir, err)}
		}
	}
	_ = os.Remove(resultFile)
	_ = os.Remove(excFile)
	run, stepErr := a.runProcess(ctx, in, attempt, process{argv: []string{python, "-c", pythonRunner}},
		"PLAYBOOK_PY_CODE="+codeFile, "PLAYBOOK_PY_ARGS="+argsFile, "PLAYBOOK_PY_RESULT="+resultFile, "PLAYBOOK_PY_EXCEPTION="+excFile)
	if stepErr != nil {
		return ToolResult{Err: stepErr}
	}
	b, err := readBounded(excFile, pythonExceptionLimit, "the python exception file")
	if err != nil && !os.IsNotExist(err) && ctx.Err() == nil {
		code := run.exitCode
		o := failure(contract.ErrPythonException, "the step raised an exception, but "+err.Error(), map[string]any{"stderr": run.stderrTail()})
		o.ExitCode = &code
		return o
	}
	if err == nil && ctx.Err() == nil {
		var exc struct {
			Exception string `json:"exception"`
			Message   string `json:"message"`
			Traceback string `json:"traceback"`
		}
		if json.Unmarshal(b, &exc) == nil {
			code := run.exitCode
			o := failure(contract.ErrPythonException, exc.Exception+": "+exc.Message,
				map[string]any{"exception": exc.Exception, "traceback": exc.Traceback, "stdout": run.stdoutTail(), "stderr": run.stderrTail()})
			o.ExitCode = &code
			return o
		}
	}
	if run.exitCode != 0 || ctx.Err() != nil {
		return exitFailure(run)
	}
	var result any
	b, err = readBounded(resultFile, valueLimit(a.largeValues(in)), "the value main returned (as JSON)")
	if err != nil && !os.IsNotExist(err) {
		fix := ": hand large outputs on as files (outputs.files), or give the workers and the CLI a store (PLAYBOOK_STORE), and a value may take " + size(contract.LargeValueBudget)
		if a.largeValues(in) {
			fix = ": hand large outputs on as files (outputs.files)"
		}
		return failure(contract.ErrResultTooLarge, err.Error()+fix, nil)
	}
	code := run.exitCode
	if err == nil {
		if err := json.Unmarshal(b, &result); err != nil {
			o := failure(contract.ErrTool, "the value main returned could not be read back as JSON: "+err.Error(), nil)
			o.ExitCode = &code
			return o
		}
	}
	return ToolResult{Result: result, ExitCode: &code}
}
