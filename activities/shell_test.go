package activities

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"

	"playbook/internal/proctest"
	"playbook/interpreter/contract"
)

func shellInput(t *testing.T, toolSpec map[string]any) contract.StepInput {
	return contract.StepInput{WorkflowID: "wf-1", Step: "s", Kind: "shell", Spec: toolSpec, BaseDir: t.TempDir()}
}

func TestShellResult(t *testing.T) {
	a := &Activities{LogDir: t.TempDir()}
	in := shellInput(t, map[string]any{"command": `echo "{\"rows\": $N}"; echo warn >&2; pwd >&2`, "env": map[string]any{"N": 7.0}})
	o := a.runTool(context.Background(), in, 2)
	require.Nil(t, o.Err)
	r := o.Result.(map[string]any)
	require.Equal(t, 0, r["exit_code"])
	require.Equal(t, map[string]any{"rows": 7.0}, r["json"])
	require.Equal(t, "warn\n"+in.BaseDir+"\n", r["stderr"], "runs in the playbook's directory")
	out, err := os.ReadFile(filepath.Join(a.LogDir, "wf-1", "s", "attempt-2.stdout"))
	require.NoError(t, err)
	require.Equal(t, "{\"rows\": 7}\n", string(out), "each attempt keeps its own log")
}

func TestShellEnvironment(t *testing.T) {
	a := &Activities{LogDir: t.TempDir()}
	in := shellInput(t, map[string]any{"command": `echo "$PLAYBOOK_RUN_ID $PLAYBOOK_STEP $PLAYBOOK_ATTEMPT $PLAYBOOK_LOG_DIR"`})
	o := a.runTool(context.Background(), in, 3)
	require.Nil(t, o.Err)
	require.Equal(t, "wf-1 s 3 "+filepath.Join(a.LogDir, "wf-1", "s")+"\n", o.Result.(map[string]any)["stdout"])
}

func TestShellFailure(t *testing.T) {
	a := &Activities{LogDir: t.TempDir()}
	o := a.runTool(context.Background(), shellInput(t, map[string]any{"command": "echo first >&2; echo 'disk full' >&2; exit 3"}), 1)
	require.NotNil(t, o.Err)
	require.Equal(t, "exit_code", o.Err.Type)
	require.Equal(t, "exited with code 3: disk full", o.Err.Message)
	require.Equal(t, 3, *o.ExitCode)
	require.Equal(t, "first\ndisk full\n", o.Err.Details.(map[string]any)["stderr"])
}

// An environment variable over Linux's 128 KiB for one string cannot
// reach a process: the error names it and says how to hand the value on
// (it said "argument list too long").
func TestAnEnvValueOverLinuxsBoundIsNamed(t *testing.T) {
	a := &Activities{LogDir: t.TempDir()}
	o := a.runTool(context.Background(), shellInput(t, map[string]any{"command": "true", "env": map[string]any{"S": strings.Repeat("x", 600_000)}}), 1)
	require.NotNil(t, o.Err)
	require.Equal(t, contract.ErrTool, o.Err.Type)
	require.Equal(t, "cannot start /bin/sh: env.S is 585.9 KiB, and Linux takes at most 128 KiB for one variable: hand the value on as a file (outputs.files, inputs.files)", o.Err.Message)
}

func TestShellWorkdirRelativeToPlaybook(t *testing.T) {
	a := &Activities{LogDir: t.TempDir()}
	in := shellInput(t, map[string]any{"command": "pwd", "workdir": "sub"})
	require.NoError(t, os.Mkdir(filepath.Join(in.BaseDir, "sub"), 0o755))
	o := a.runTool(context.Background(), in, 1)
	require.Nil(t, o.Err)
	require.Equal(t, filepath.Join(in.BaseDir, "sub")+"\n", o.Result.(map[string]any)["stdout"])
}

// A relative workdir that is not there is made, with its parents (a
// loop's elements each in their own, "parts/{{ item }}"); an absolute one
// is the worker's, and fails the attempt saying which directory is
// missing, not that /bin/sh is.
func TestShellWorkdirIsMade(t *testing.T) {
	a := &Activities{LogDir: t.TempDir()}
	in := shellInput(t, map[string]any{"command": "pwd", "workdir": "parts/7"})
	o := a.runTool(context.Background(), in, 1)
	require.Nil(t, o.Err)
	require.Equal(t, filepath.Join(in.BaseDir, "parts", "7")+"\n", o.Result.(map[string]any)["stdout"])

	missing := filepath.Join(t.TempDir(), "nothere")
	o = a.runTool(context.Background(), shellInput(t, map[string]any{"command": "pwd", "workdir": missing}), 1)
	require.NotNil(t, o.Err)
	require.Equal(t, "tool_error: workdir "+missing+": no such file or directory", o.Err.Error())

	file := filepath.Join(in.BaseDir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	o = a.runTool(context.Background(), shellInput(t, map[string]any{"command": "pwd", "workdir": file}), 1)
	require.Equal(t, "tool_error: workdir "+file+" is not a directory", o.Err.Error())
}

// A cancelled or timed-out step kills its whole process group: nothing it
// started is left running.
func TestShellKillsProcessGroup(t *testing.T) {
	a := &Activities{LogDir: t.TempDir()}
	marker := fmt.Sprintf("playbook-test-sleep-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), os.Getpid())
	in := shellInput(t, map[string]any{"command": "sh -c 'sleep 30; echo " + marker + "' & sleep 30"})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	o := a.runTool(ctx, in, 1)
	require.Less(t, time.Since(start), 5*time.Second)
	require.NotNil(t, o.Err)
	require.Equal(t, 128+15, *o.ExitCode, "SIGTERM")
	require.Empty(t, processesMatching(marker), "no process of the step is left")
}

// Processes a step leaves behind when it exits are killed too.
func TestShellLeavesNothingBehind(t *testing.T) {
	a := &Activities{LogDir: t.TempDir()}
	marker := fmt.Sprintf("playbook-test-orphan-%d", os.Getpid())
	o := a.runTool(context.Background(), shellInput(t, map[string]any{"command": "sh -c 'sleep 30; echo " + marker + "' >/dev/null 2>&1 &"}), 1)
	require.Nil(t, o.Err)
	time.Sleep(100 * time.Millisecond)
	require.Empty(t, processesMatching(marker))
}

// processesMatching lists the PIDs whose command line contains s.
var processesMatching = proctest.Matching

// A step sees a minimal environment: the worker's secrets stay with the
// worker unless it passes them by name, Temporal's settings never reach a
// step, and a step's env cannot override the engine's PLAYBOOK_* variables.
func TestShellSeesOnlyItsEnvironment(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "worker-secret")
	t.Setenv("TEMPORAL_API_KEY", "temporal-key")
	t.Setenv("PASSED_ON", "yes")
	a := &Activities{LogDir: t.TempDir(), StepEnv: []string{"PASSED_ON", "TEMPORAL_API_KEY"}}
	in := shellInput(t, map[string]any{"command": "env", "env": map[string]any{"OWN": "mine", "PLAYBOOK_STEP": "forged"}})
	o := a.runTool(context.Background(), in, 1)
	require.Nil(t, o.Err)
	env := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(o.Result.(map[string]any)["stdout"].(string)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	require.NotContains(t, env, "AWS_SECRET_ACCESS_KEY")
	require.NotContains(t, env, "TEMPORAL_API_KEY", "even when listed")
	require.Equal(t, "yes", env["PASSED_ON"])
	require.Equal(t, "mine", env["OWN"])
	require.Equal(t, "s", env["PLAYBOOK_STEP"])
	require.Equal(t, os.Getenv("PATH"), env["PATH"])
	for k := range env {
		switch k {
		case "PATH", "HOME", "LANG", "TZ", "TMPDIR", "PASSED_ON", "OWN", "PWD", "SHLVL", "_":
		default:
			require.True(t, strings.HasPrefix(k, "PLAYBOOK_"), "the step sees %s", k)
		}
	}
}

// A step's attempt waits for its process, copies its output, and watches
// for heartbeats and its worker's stop, without a goroutine of its own
// (#46: it had two for the output, one each for the heartbeats and the
// drain), and still keeps what the process wrote: twenty attempts through
// the SDK's activity environment, printing to both streams, start fewer
// goroutines than twenty (the test's process may start a few of its own
// meanwhile).
func TestAttemptsStartNoGoroutine(t *testing.T) {
	a := &Activities{LogDir: t.TempDir()}
	env := quietSuite().NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(a.RunStep, activity.RegisterOptions{Name: "RunStep"})
	base := t.TempDir()
	attempt := func(i int) {
		in := contract.StepInput{WorkflowID: "wf", RunID: "run", Step: fmt.Sprintf("s%d", i), Kind: "shell",
			Spec: map[string]any{"command": "echo out; echo err >&2"}, BaseDir: base, Timeout: time.Minute, Lost: &contract.LostSpec{Attempts: 3}}
		v, err := env.ExecuteActivity("RunStep", in)
		require.NoError(t, err)
		var out contract.StepOutput
		require.NoError(t, v.Get(&out))
		result := out.Result.(map[string]any)
		require.Equal(t, "out\n", result["stdout"])
		require.Equal(t, "err\n", result["stderr"])
		b, err := os.ReadFile(filepath.Join(a.LogDir, "wf", "run", in.Step, "attempt-1.stdout"))
		require.NoError(t, err)
		require.Equal(t, "out\n", string(b))
	}
	attempt(0) // the keeper starts
	before := goroutinesCreated()
	for i := 1; i <= 20; i++ {
		attempt(i)
	}
	require.Less(t, goroutinesCreated()-before, uint64(20), "goroutines started by 20 attempts")
}
