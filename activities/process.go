package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/sdk/activity"
	"golang.org/x/sys/unix"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
)

// tailBytes is how much of stdout and stderr a result carries; the log
// files keep the rest, up to the worker's cap (outputLog).
const tailBytes = 4096

// jsonLimit is the largest stdout parsed as the result's `json`.
const jsonLimit = 1 << 20

// killGrace is how long a cancelled process group has between SIGTERM and SIGKILL.
const killGrace = 5 * time.Second

// process is one process a step runs: its argv and extra environment.
type process struct {
	argv    []string
	workdir string // relative to the playbook's directory; empty: that directory
	env     map[string]any
	// name tells the log files apart: "" for the step's own process,
	// "recovery" for a recovery script.
	name string
}

// processRun is what a finished process left.
type processRun struct {
	exitCode   int
	stdoutPath string
	stderrPath string
	errorFile  string // PLAYBOOK_ERROR_FILE
	logDir     string
	// noStdout and noStderr: the stream wrote nothing by the process's
	// end, so reading its file back is skipped.
	noStdout, noStderr bool
	// jsonLimit is the largest stdout parsed as JSON (valueLimit).
	jsonLimit int64
}

func (p processRun) stdoutTail() string { return tailUnless(p.noStdout, p.stdoutPath) }
func (p processRun) stderrTail() string { return tailUnless(p.noStderr, p.stderrPath) }

// stdoutJSON is stdout parsed as JSON, nil when it is not (nor when its log
// dropped the head of a long stdout: it starts with a line saying so).
func (p processRun) stdoutJSON() any {
	if p.noStdout {
		return nil
	}
	return parseJSONFile(p.stdoutPath, p.jsonLimit)
}

func tailUnless(empty bool, path string) string {
	if empty {
		return ""
	}
	return tail(path)
}

// attemptLogDir is where one step's logs go in this run: LOGDIR/<workflow
// id>/<run id>/<step> (StepLogDir), created 0700. The names were checked at
// submission; they are checked again here, so that a run started by any
// client stays inside LOGDIR.
func (a *Activities) attemptLogDir(in contract.StepInput) (string, *contract.StepError) {
	dir, _, err := a.newAttemptLogDir(in)
	return dir, err
}

// newAttemptLogDir is attemptLogDir, and whether this call created the
// directory (so that it holds no file of an attempt before).
func (a *Activities) newAttemptLogDir(in contract.StepInput) (dir string, created bool, _ *contract.StepError) {
	names := map[string]string{"run ID": in.WorkflowID, "step name": in.Step}
	if in.RunID != "" {
		names["Temporal run ID"] = in.RunID
	}
	for what, name := range names {
		if err := spec.CheckPathName(what, name); err != nil {
			return "", false, &contract.StepError{Type: contract.ErrTool, Message: "log directory: " + err.Error()}
		}
	}
	dir = a.stepLogDir(in)
	// Most attempts are a step's first, in a run whose directory exists:
	// one mkdir, not the stats MkdirAll starts with.
	err := os.Mkdir(dir, 0o700)
	if err == nil {
		return dir, true, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		if noSpace(err) {
			return "", false, logSpaceFailure(a.LogDir, err)
		}
		return "", false, &contract.StepError{Type: contract.ErrTool, Message: "log directory: " + err.Error()}
	}
	return dir, false, nil
}

// noLogSpace marks, as its details, the failure of an attempt whose logs
// the disk had no room for (logSpaceFailure): the worker's failure, not
// the step's, which RunStep retries as it does a lost attempt.
type noLogSpace struct{}

// noSpace says whether err is the disk (or the user's quota) being full.
func noSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// logSpaceFailure is the failure of an attempt whose logs could not be
// kept: the log directory's disk is full.
func logSpaceFailure(logDir string, err error) *contract.StepError {
	var pathErr *os.PathError
	if errors.As(err, &pathErr) {
		err = pathErr.Err
	}
	return &contract.StepError{Type: contract.ErrTool, Details: noLogSpace{},
		Message: fmt.Sprintf("the worker's log directory %s is full (%v): the attempt's output could not be kept; a failure of the worker, not of the step, retried as a lost attempt is", logDir, err)}
}

// isLogSpaceFailure says whether a step error is logSpaceFailure's.
func isLogSpaceFailure(e *contract.StepError) bool {
	if e == nil {
		return false
	}
	_, ok := e.Details.(noLogSpace)
	return ok
}

// stepLogDir is the directory of a step's logs in this run.
func (a *Activities) stepLogDir(in contract.StepInput) string {
	return StepLogDir(a.LogDir, in.WorkflowID, in.RunID, in.Step)
}

// maxLogBytes is the cap on each stream's log file.
func (a *Activities) maxLogBytes() int64 {
	if a.MaxLogBytes > 0 {
		return a.MaxLogBytes
	}
	return DefaultMaxLogBytes
}

// runProcess runs a process in its own process group, stdout and stderr in
// this attempt's log files, each kept to the worker's cap (outputLog). When
// ctx ends the group gets SIGTERM, then SIGKILL; when the process exits,
// whatever it left behind in its group is killed, so no step's process
// outlives the step; and the worker's keeper kills the group if the worker
// dies first (keeper.go).
func (a *Activities) runProcess(ctx context.Context, in contract.StepInput, attempt int, p process, extraEnv ...string) (processRun, *contract.StepError) {
	dir := processDir(resolveBase(in.BaseDir), p.workdir)
	// A working directory that cannot be had fails the attempt as a
	// process that cannot start does: its log files are there, empty.
	dirErr := makeWorkdir(dir, p.workdir)
	logDir, created, logDirErr := a.newAttemptLogDir(in)
	if logDirErr != nil {
		return processRun{}, logDirErr
	}
	prefix := fmt.Sprintf("attempt-%d", attempt)
	if p.name != "" {
		prefix += "." + p.name
	}
	run := processRun{
		logDir:     logDir,
		stdoutPath: filepath.Join(logDir, prefix+".stdout"),
		stderrPath: filepath.Join(logDir, prefix+".stderr"),
		errorFile:  filepath.Join(logDir, prefix+".error.json"),
		jsonLimit:  valueLimit(a.largeValues(in)),
	}
	// An error file an earlier run of this attempt left (a lost attempt
	// run again) is not this one's; a new directory has none.
	if !created {
		_ = os.Remove(run.errorFile)
	}
	stdout, outEnd, err := newStream(run.stdoutPath, a.maxLogBytes(), redactorOf(ctx))
	if err != nil {
		return run, logFileFailure(a.LogDir, err)
	}
	stderr, errEnd, err := newStream(run.stderrPath, a.maxLogBytes(), redactorOf(ctx))
	if err != nil {
		_ = outEnd.Close()
		settle(stdout)
		return run, logFileFailure(a.LogDir, err)
	}

	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = outEnd, errEnd
	cmd.Env = stepEnvironment(a.StepEnv, p.env, append([]string{
		"PLAYBOOK_RUN_ID=" + in.WorkflowID,
		"PLAYBOOK_STEP=" + in.Step,
		"PLAYBOOK_ATTEMPT=" + strconv.Itoa(attempt),
		"PLAYBOOK_LOG_DIR=" + logDir,
		"PLAYBOOK_ERROR_FILE=" + run.errorFile,
		"PLAYBOOK_LOGICAL_TIME=" + in.LogicalTime,
	}, append(traceEnv(ctx), extraEnv...)...))
	// The thread that forks the leader stays this goroutine's until the
	// leader is reaped: its parent-death signal follows that thread
	// (startInGroup).
	runtime.LockOSThread()
	locked := true
	defer func() {
		if locked {
			runtime.UnlockOSThread()
		}
	}()
	if dirErr == nil {
		err = startInGroup(cmd)
	}
	// The process holds the streams' write ends now: the copies end with it.
	_ = outEnd.Close()
	_ = errEnd.Close()
	// The log files are created while the process starts up (newStream).
	// The directory holding them exists before the process starts, for the
	// process may write in it (PLAYBOOK_LOG_DIR, PLAYBOOK_ERROR_FILE), and
	// a disk without room for it fails the attempt before its process runs.
	_ = stdout.open()
	_ = stderr.open()
	if dirErr != nil {
		settle(stdout, stderr)
		return run, dirErr
	}
	if err != nil {
		settle(stdout, stderr)
		if errors.Is(err, syscall.E2BIG) {
			if name, n := longestEnv(cmd.Env); n > maxEnvString {
				return run, &contract.StepError{Type: contract.ErrTool, Message: fmt.Sprintf("cannot start %s: env.%s is %s, and Linux takes at most 128 KiB for one variable: hand the value on as a file (outputs.files, inputs.files)", p.argv[0], name, expr.FormatBytes(n))}
			}
		}
		return run, &contract.StepError{Type: contract.ErrTool, Message: fmt.Sprintf("cannot start %s: %v", p.argv[0], err)}
	}
	pgid := cmd.Process.Pid
	// The attempt waits for its process through a pidfd, which it polls
	// with the streams' pipes (pump). It is opened once the leader runs
	// (which no one but this attempt reaps): where pidfds do not work (a
	// kernel before 5.3, some sandboxes), the attempt waits as before.
	pidfd, err := unix.PidfdOpen(pgid, 0)
	if err != nil {
		pidfd = -1
	} else {
		defer syscall.Close(pidfd)
	}
	// The attempt waits for its process here (pump); only a cancel starts
	// a goroutine, which signals the group (SIGTERM, then SIGKILL after
	// killGrace) while the wait goes on.
	exited, killed := make(chan struct{}), make(chan struct{})
	stopKill := context.AfterFunc(ctx, func() {
		defer close(killed)
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(killGrace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	})
	// Without a pidfd (a kernel before 5.3), or should poll fail, the
	// streams are copied on goroutines of their own while the attempt
	// waits for its process.
	followed := pidfd < 0 || pump(pidfd, stdout, stderr) != nil
	if followed {
		for _, l := range []*outputLog{stdout, stderr} {
			if l.fd >= 0 {
				l.follow()
			}
		}
		_ = waitExited(pgid)
	}
	close(exited)
	if !stopKill() {
		// The cancel's goroutine signals the group: it ends before the
		// leader is reaped, so that its signals cannot reach a group that
		// took the ID after.
		<-killed
	}
	// Whatever the process left in its group goes with it; the group leaves
	// the keeper's list while its unreaped leader still holds its ID, and
	// only then is the leader reaped.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	groupKeeper.remove(pgid)
	waitErr := cmd.Wait()
	runtime.UnlockOSThread() // reaped: the thread is no longer the leader's parent
	locked = false
	groupGone(pgid)
	settle(stdout, stderr)
	if followed {
		waitOutput(stdout, stderr)
	}

	var exitErr *exec.ExitError
	switch {
	case errors.As(waitErr, &exitErr):
		run.exitCode = exitErr.ExitCode()
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			run.exitCode = 128 + int(ws.Signal())
		}
	case waitErr != nil:
		return run, &contract.StepError{Type: contract.ErrTool, Message: waitErr.Error()}
	}
	run.noStdout, run.noStderr = stdout.empty(), stderr.empty()
	// A process that failed while its logs found the disk full may have
	// failed of the same full disk: the worker's failure, retried as a
	// lost attempt. One that succeeded did its work: its outcome stands
	// (run again, a step that is not idempotent would do it twice), with
	// logs cut short (or none, when its log file could not be created),
	// which the worker's log says.
	for _, l := range []*outputLog{stdout, stderr} {
		err := l.writeErr()
		if err == nil {
			continue
		}
		if run.exitCode != 0 && noSpace(err) {
			return run, logSpaceFailure(a.LogDir, err)
		}
		if activity.IsActivity(ctx) {
			activity.GetLogger(ctx).Warn("the attempt's output could not all be kept in its log; the attempt's outcome stands", "log", l.path, "error", err)
		}
	}
	return run, nil
}

// logFileFailure is the failure of an attempt whose log (its file, or the
// pipe its stream goes through) could not be created.
func logFileFailure(logDir string, err error) *contract.StepError {
	if noSpace(err) {
		return logSpaceFailure(logDir, err)
	}
	return &contract.StepError{Type: contract.ErrTool, Message: err.Error()}
}

// groupGone waits, a second at most, until no process of the killed group
// is left running: SIGKILL takes effect when each process next runs, so a
// step's end does not return while one it started still runs. A member
// that has died stays in the group until its parent reaps it: the worker
// reaps those it is the parent of (reapGroup), and a zombie whose parent
// reaps nothing runs nothing, so the step does not wait for it.
func groupGone(pgid int) {
	deadline := time.Now().Add(time.Second)
	for i := 0; ; i++ {
		reapGroup(pgid)
		if syscall.Kill(-pgid, 0) != nil || time.Now().After(deadline) {
			return
		}
		// Most groups are gone within a few checks; only then is /proc read,
		// and every 10 ms after that.
		if i%10 == 5 && !groupRuns(pgid) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// reapGroup reaps the members of group pgid that have died, when this
// worker is their parent: a worker that is PID 1 (or a subreaper) inherits
// what a step left behind. The group's leader, the only child the worker
// started in it, is reaped before, so no one else's child is taken.
func reapGroup(pgid int) {
	for {
		var status syscall.WaitStatus
		if pid, err := syscall.Wait4(-pgid, &status, syscall.WNOHANG, nil); pid <= 0 || err != nil {
			return
		}
	}
}

// groupRuns says whether a process of group pgid is alive and not a
// zombie, as /proc shows it; when /proc cannot be read, it says yes.
func groupRuns(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	group := strconv.Itoa(pgid)
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		f := procStat(e.Name()) // nil: gone meanwhile
		if len(f) >= 3 && f[2] == group && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}

// procStat is what /proc/PID/stat says after the command's name: state,
// parent, group...; nil when there is no such process.
func procStat(pid string) []string {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	// pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
	end := bytes.LastIndexByte(stat, ')')
	if err != nil || end < 0 {
		return nil
	}
	return strings.Fields(string(stat[end+1:]))
}

// exitFailure is the structured error of a process that exited non-zero.
// A process may supply its own message and details by writing
// {"message": ..., "details": ...} to the file in PLAYBOOK_ERROR_FILE.
func exitFailure(run processRun) ToolResult {
	errTail := run.stderrTail()
	msg := fmt.Sprintf("exited with code %d", run.exitCode)
	if last := lastLine(errTail); last != "" {
		msg += ": " + last
	}
	details := map[string]any{
		"exit_code": run.exitCode, "stdout": run.stdoutTail(), "stderr": errTail, "stdout_log": run.stdoutPath, "stderr_log": run.stderrPath,
	}
	b, err := readBounded(run.errorFile, errorFileLimit, "PLAYBOOK_ERROR_FILE")
	if err != nil && !os.IsNotExist(err) {
		msg += " (" + err.Error() + ")"
	}
	if err == nil {
		var own struct {
			Message string `json:"message"`
			Details any    `json:"details"`
		}
		if json.Unmarshal(b, &own) == nil {
			if own.Message != "" {
				msg = own.Message
			}
			if own.Details != nil {
				details["supplied"] = own.Details
			}
		}
	}
	code := run.exitCode
	o := failure(contract.ErrExitCode, msg, details)
	o.ExitCode = &code
	return o
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

// parseJSONFile is the file at path parsed as JSON, nil when it is not.
// A file over limit that starts as JSON does (an object or a list) is a
// stub saying so: an expression reading past it says the value was cut.
func parseJSONFile(path string, limit int64) any {
	st, err := os.Stat(path)
	if err != nil || st.Size() == 0 {
		return nil
	}
	if st.Size() > limit {
		if startsAsJSON(path) {
			return expr.Truncated(int(st.Size()), int(limit), "the step's stdout log (playbook logs RUN STEP); give the workers and the CLI a store (PLAYBOOK_STORE) and a step's result may take "+expr.FormatBytes(contract.LargeValueBudget))
		}
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

// startsAsJSON tells whether the file's first character after white space
// opens a JSON object or list.
func startsAsJSON(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 512)
	n, _ := f.Read(b)
	t := strings.TrimLeft(string(b[:n]), " \t\r\n")
	return strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")
}

// maxEnvString is the most Linux takes for one string of a process's
// environment (MAX_ARG_STRLEN, NAME=VALUE and its terminating zero).
const maxEnvString = 128<<10 - 1

// longestEnv is the name of env's longest NAME=VALUE and its length.
func longestEnv(env []string) (name string, n int) {
	for _, kv := range env {
		if len(kv) > n {
			name, _, _ = strings.Cut(kv, "=")
			n = len(kv)
		}
	}
	return name, n
}
