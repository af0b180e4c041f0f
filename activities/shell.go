package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// tailBytes is how much of stdout and stderr a result carries; the log
// files keep everything.
const tailBytes = 4096

// jsonLimit is the largest stdout parsed as the result's `json`.
const jsonLimit = 1 << 20

// killGrace is how long a cancelled process group has between SIGTERM and SIGKILL.
const killGrace = 5 * time.Second

type shellSpec struct {
	Command string         `json:"command"`
	Env     map[string]any `json:"env"`
	Workdir string         `json:"workdir"`
}

// runShell runs `/bin/sh -c command` in its own process group, writing
// stdout and stderr to this attempt's log files. When ctx ends the group gets
// SIGTERM, then SIGKILL; when the shell exits, whatever it left behind in its
// group is killed, so no step's process outlives the step.
func (a *Activities) runShell(ctx context.Context, in StepInput, attempt int) Outcome {
	var spec shellSpec
	if err := decodeSpec(in.Spec, &spec); err != nil {
		return failure("tool_error", "shell spec: "+err.Error(), nil)
	}
	base := resolveBase(in.BaseDir)
	dir := base
	if spec.Workdir != "" {
		dir = spec.Workdir
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(base, dir)
		}
	}
	logDir := filepath.Join(a.LogDir, in.WorkflowID, in.Step)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return failure("tool_error", "log directory: "+err.Error(), nil)
	}
	stdoutPath := filepath.Join(logDir, fmt.Sprintf("attempt-%d.stdout", attempt))
	stderrPath := filepath.Join(logDir, fmt.Sprintf("attempt-%d.stderr", attempt))
	stdout, err := os.Create(stdoutPath)
	if err != nil {
		return failure("tool_error", err.Error(), nil)
	}
	defer stdout.Close()
	stderr, err := os.Create(stderrPath)
	if err != nil {
		return failure("tool_error", err.Error(), nil)
	}
	defer stderr.Close()

	cmd := exec.Command("/bin/sh", "-c", spec.Command)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = append(os.Environ(),
		"PLAYBOOK_RUN_ID="+in.WorkflowID,
		"PLAYBOOK_STEP="+in.Step,
		"PLAYBOOK_ATTEMPT="+strconv.Itoa(attempt),
		"PLAYBOOK_LOG_DIR="+logDir,
	)
	for k, v := range spec.Env {
		cmd.Env = append(cmd.Env, k+"="+stringValue(v))
	}
	if err := cmd.Start(); err != nil {
		return failure("tool_error", "cannot start /bin/sh: "+err.Error(), nil)
	}
	pgid := cmd.Process.Pid
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var waitErr error
	select {
	case waitErr = <-waited:
	case <-ctx.Done():
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case waitErr = <-waited:
		case <-time.After(killGrace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			waitErr = <-waited
		}
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)

	code := 0
	var exitErr *exec.ExitError
	switch {
	case errors.As(waitErr, &exitErr):
		code = exitErr.ExitCode()
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	case waitErr != nil:
		return failure("tool_error", waitErr.Error(), nil)
	}
	outTail, errTail := tail(stdoutPath), tail(stderrPath)
	result := map[string]any{"exit_code": code, "stdout": outTail, "stderr": errTail, "json": parseJSONFile(stdoutPath)}
	if code == 0 && ctx.Err() == nil {
		return Outcome{Result: result, ExitCode: &code}
	}
	msg := fmt.Sprintf("exited with code %d", code)
	if last := lastLine(errTail); last != "" {
		msg += ": " + last
	}
	f := failure("exit_code", msg, map[string]any{
		"exit_code": code, "stderr": errTail, "stdout_log": stdoutPath, "stderr_log": stderrPath,
	})
	f.ExitCode = &code
	return f
}

func tail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > tailBytes {
		_, _ = f.Seek(-tailBytes, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

func parseJSONFile(path string) any {
	st, err := os.Stat(path)
	if err != nil || st.Size() == 0 || st.Size() > jsonLimit {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	return v
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
