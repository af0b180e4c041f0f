package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"playbook/activities"
	"playbook/internal/store"
	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
	"playbook/runs"
)

// Bounds of what one tool call returns.
const (
	mcpTailLines    = 50
	mcpLogChunk     = 16 << 10
	mcpLogChunkMax  = 64 << 10
	mcpListDefault  = 20
	mcpListMax      = 200
	mcpWho          = "mcp"
	mcpWriteRefusal = "this MCP server is read-only: start it with `playbook mcp --allow-write` to classify, approve, reject, retry or cancel; nothing was changed"
)

// Options are what the server's tools work with.
type Options struct {
	// Client reaches Temporal, in Namespace; retry_run starts its runs on
	// TaskQueue.
	Client    runs.Client
	Namespace string
	TaskQueue string
	// AllowWrite enables the tools that change a run (--allow-write).
	AllowWrite bool
	// LogDir is the worker's log directory, for step logs (--log-dir).
	LogDir string
	// Root is where validate_playbook, test_playbook and retry_run read
	// files (--root).
	Root Root
	// ActFor are the people approve_step and reject_step may decide for
	// (--act-for); by default they decide as mcp only.
	ActFor []string
	// Store is the workers' store, where list_files finds a run's files
	// (--store).
	Store store.Store
	// Check is the front end's last word before retry_run starts a run
	// (the CLI's codec check); optional.
	Check runs.Check
	// LargeValues: Client keeps payloads over 256 KiB in Store, so the
	// runs retry_run starts may too (runs.Start.LargeValues).
	LargeValues bool
}

// tools are the MCP server's tools.
type tools struct{ Options }

type runArgs struct {
	Run string `json:"run" jsonschema:"the run's workflow ID"`
}

type listRunsArgs struct {
	Status   string `json:"status,omitempty" jsonschema:"only runs in this status: running, waiting, queued, completed, completed_with_warnings, failed, cancelled, terminated or timed_out"`
	Playbook string `json:"playbook,omitempty" jsonschema:"only runs of the playbook with this name"`
	Since    string `json:"since,omitempty" jsonschema:"only runs started since then: an RFC 3339 time or a duration back from now such as 24h"`
	Limit    int    `json:"limit,omitempty" jsonschema:"at most this many runs (default 20, at most 200)"`
}

type stepLogsArgs struct {
	Run     string `json:"run" jsonschema:"the run's workflow ID"`
	Step    string `json:"step" jsonschema:"the step's name"`
	Attempt int    `json:"attempt,omitempty" jsonschema:"which attempt, 1-based (default the last logged)"`
	Stream  string `json:"stream,omitempty" jsonschema:"stdout or stderr (default stderr)"`
	Offset  int64  `json:"offset,omitempty" jsonschema:"byte offset to read from (default 0); use next_offset of the previous call to page"`
	Limit   int    `json:"limit,omitempty" jsonschema:"at most this many bytes (default 16384, at most 65536)"`
}

type classifyArgs struct {
	Run    string `json:"run" jsonschema:"the run's workflow ID"`
	Step   string `json:"step" jsonschema:"the pending_failed step"`
	Action string `json:"action" jsonschema:"retry (run the step again), fail (fail it as if no one had waited) or skip (skip it and its dependants)"`
	Reason string `json:"reason" jsonschema:"why: recorded in the run's events and shown by status"`
	By     string `json:"by,omitempty" jsonschema:"who classifies (default mcp)"`
}

type approveArgs struct {
	Run    string         `json:"run" jsonschema:"the run's workflow ID"`
	Step   string         `json:"step" jsonschema:"the approval step waiting for a decision"`
	Inputs map[string]any `json:"inputs,omitempty" jsonschema:"values for the step's declared inputs, each of its default's type (list_pending_failed shows them)"`
	Reason string         `json:"reason" jsonschema:"why: recorded with the decision"`
	By     string         `json:"by,omitempty" jsonschema:"who decides: mcp (the default), or a name the server was started with --act-for"`
}

type rejectArgs struct {
	Run    string `json:"run" jsonschema:"the run's workflow ID"`
	Step   string `json:"step" jsonschema:"the approval step waiting for a decision"`
	Reason string `json:"reason" jsonschema:"why: recorded with the decision, in the step's error"`
	By     string `json:"by,omitempty" jsonschema:"who decides: mcp (the default), or a name the server was started with --act-for"`
}

type retryArgs struct {
	Run    string   `json:"run" jsonschema:"the finished run to retry"`
	Step   string   `json:"step,omitempty" jsonschema:"another name of from"`
	From   string   `json:"from,omitempty" jsonschema:"run this step and everything downstream of it again, even if unchanged"`
	File   string   `json:"file,omitempty" jsonschema:"run this playbook file instead of the run's frozen one"`
	Text   string   `json:"text,omitempty" jsonschema:"run this playbook text instead of the run's frozen one (its sub-playbooks are the run's)"`
	Set    []string `json:"set,omitempty" jsonschema:"workload values KEY=VALUE set on top of the run's, as run --set"`
	Reason string   `json:"reason" jsonschema:"why: shown with the new run"`
	By     string   `json:"by,omitempty" jsonschema:"who asks (default mcp)"`
}

type cancelArgs struct {
	Run    string `json:"run" jsonschema:"the run to cancel"`
	Reason string `json:"reason" jsonschema:"why: recorded with the cancel request"`
}

type validateArgs struct {
	File string `json:"file,omitempty" jsonschema:"path of a playbook file on the server's machine"`
	Text string `json:"text,omitempty" jsonschema:"the playbook's YAML text (sub-playbooks resolve against the server's working directory)"`
}

// pendingView is one pending_failed step as list_pending_failed shows it.
type pendingView struct {
	Step       string    `json:"step"`
	Since      time.Time `json:"since"`
	Attempts   int       `json:"attempts"`
	Recovery   string    `json:"recovery"`
	ErrorType  string    `json:"error_type"`
	Error      string    `json:"error"`
	ExitCode   any       `json:"exit_code,omitempty"`
	StderrTail string    `json:"stderr_tail"`
	StdoutTail string    `json:"stdout_tail"`
}

type stepLogsView struct {
	Attempt        int    `json:"attempt"`
	Stream         string `json:"stream"`
	Path           string `json:"path"`
	Size           int64  `json:"size"`
	Offset         int64  `json:"offset"`
	NextOffset     int64  `json:"next_offset,omitempty"`
	More           bool   `json:"more"`
	Text           string `json:"text"`
	AttemptsLogged []int  `json:"attempts_logged"`
}

// New is the MCP server, its tools, the guides and the triage prompt.
func New(o Options) *mcp.Server {
	t := &tools{o}
	srv := mcp.NewServer(&mcp.Implementation{Name: "playbook", Version: Version}, &mcp.ServerOptions{
		Instructions: "playbook runs YAML playbooks as durable workflows on Temporal. A failed step with no matching " +
			"exit-code rule, in a playbook with use_pending_failed, waits in pending_failed for a decision: list them with " +
			"list_pending_failed, read step_logs, then classify_step retry, fail or skip with a reason.",
	})
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(srv, &mcp.Tool{Name: "list_runs", Description: "List playbook runs (running ones first, then by when they ended, the latest first), with status and failed steps.", Annotations: readOnly}, t.listRuns)
	mcp.AddTool(srv, &mcp.Tool{Name: "run_status", Description: "A run's step table: each step's status, attempts, times, error and classification, and the live retry state of running steps.", Annotations: readOnly}, t.runStatus)
	mcp.AddTool(srv, &mcp.Tool{Name: "list_pending_failed", Description: "The run's steps waiting for a person: in pending_failed for a classification, each with its error, exit code, attempts, since when, and the last 50 lines of its stderr and stdout; and approval steps waiting for a decision, with their message, inputs and approvers.", Annotations: readOnly}, t.listPending)
	mcp.AddTool(srv, &mcp.Tool{Name: "step_logs", Description: "An attempt's stdout or stderr, a bounded chunk from an offset; page with next_offset.", Annotations: readOnly}, t.stepLogs)
	mcp.AddTool(srv, &mcp.Tool{Name: "list_files", Description: "The files a run's steps handed on (outputs.files), from the workers' store: each step's (a loop's elements as STEP[INDEX]) paths with size, sha256 and URI; with step, that step's only.", Annotations: readOnly}, t.listFiles)
	mcp.AddTool(srv, &mcp.Tool{Name: "validate_playbook", Description: "Check a playbook (a file or inline YAML) as `playbook validate` does; errors are one line naming file, line and step.", Annotations: readOnly}, t.validate)
	mcp.AddTool(srv, &mcp.Tool{Name: "test_playbook", Description: "Run a playbook's test cases (NAME.test.yaml, or every test file under a directory) as `playbook test` does: mocked steps, time skipped, no server, nothing started (real: is ignored). Returns each case's result, with the mismatches and steps' table of a failing one.", Annotations: readOnly}, t.testPlaybook)
	mcp.AddTool(srv, &mcp.Tool{Name: "classify_step", Description: "Resolve a pending_failed step: retry, fail or skip, with a reason recorded in the run. Needs --allow-write.", Annotations: &mcp.ToolAnnotations{IdempotentHint: false}}, t.classify)
	mcp.AddTool(srv, &mcp.Tool{Name: "approve_step", Description: "Approve an approval step waiting for a decision, with values for its inputs and a reason recorded in the run. Needs --allow-write.", Annotations: &mcp.ToolAnnotations{IdempotentHint: false}}, t.approve)
	mcp.AddTool(srv, &mcp.Tool{Name: "reject_step", Description: "Reject an approval step waiting for a decision: it fails with error type rejected and the reason. Needs --allow-write.", Annotations: &mcp.ToolAnnotations{IdempotentHint: false}}, t.reject)
	mcp.AddTool(srv, &mcp.Tool{Name: "retry_run", Description: "Start a new run of an ended run, with its playbook or a fixed one (file or text) and workload values set on top, reusing the completed steps whose definition and inputs did not change (from: run one step and its downstream again). Needs --allow-write."}, t.retryRun)
	mcp.AddTool(srv, &mcp.Tool{Name: "cancel_run", Description: "Cancel a run: running steps are cancelled, pending ones skipped, then end runs. Needs --allow-write."}, t.cancelRun)
	addEventTools(srv, t)
	addGuides(srv)
	return srv
}

// reply is a tool result: the value as JSON text, and as structured content.
func reply(v any) (*mcp.CallToolResult, any, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil, nil
}

// toolError turns what runs/ returned into one line an agent can act on:
// a run not found says so, a refusal is the run's own first line, and
// every other error (a run that ended, a namespace not indexed, a retry
// that cannot be made as asked) its message on one line.
func toolError(run string, err error) error {
	var notFound *runs.NotFoundError
	var refused *runs.RefusedError
	switch {
	case errors.As(err, &notFound):
		return fmt.Errorf("run %q: not found", run)
	case errors.As(err, &refused):
		return errors.New(expr.FirstLine(refused.Error()))
	}
	return errors.New(strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; "))
}

// need says which of these name, value pairs are empty, in one line.
func need(pairs ...string) error {
	var missing []string
	for i := 0; i+1 < len(pairs); i += 2 {
		if strings.TrimSpace(pairs[i+1]) == "" {
			missing = append(missing, pairs[i])
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%s: required", strings.Join(missing, ", "))
}

func (t *tools) listRuns(ctx context.Context, _ *mcp.CallToolRequest, a listRunsArgs) (*mcp.CallToolResult, any, error) {
	limit := a.Limit
	if limit <= 0 {
		limit = mcpListDefault
	}
	limit = min(limit, mcpListMax)
	filter := runs.Filter{Status: a.Status, Playbook: a.Playbook}
	if a.Since != "" {
		since, err := time.Parse(time.RFC3339, a.Since)
		if err != nil {
			d, derr := time.ParseDuration(a.Since)
			if derr != nil || d < 0 {
				return nil, nil, fmt.Errorf("since %q: give an RFC 3339 time (2026-01-02T15:04:05Z) or a duration such as 24h", a.Since)
			}
			since = time.Now().Add(-d)
		}
		filter.Since = since
	}
	list, err := runs.List(ctx, t.Client, t.Namespace, filter, limit)
	var notIndexed *runs.NotIndexedError
	if errors.As(err, &notIndexed) {
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, toolError("", err)
	}
	return reply(map[string]any{"runs": list})
}

func (t *tools) runStatus(ctx context.Context, _ *mcp.CallToolRequest, a runArgs) (*mcp.CallToolResult, any, error) {
	if err := need("run", a.Run); err != nil {
		return nil, nil, err
	}
	st, err := runs.StatusOf(ctx, t.Client, a.Run)
	if err != nil {
		return nil, nil, toolError(a.Run, err)
	}
	return reply(st)
}

type filesArgs struct {
	Run  string `json:"run" jsonschema:"the run's workflow ID"`
	Step string `json:"step,omitempty" jsonschema:"only this step's files (a loop's elements too)"`
}

func (t *tools) listFiles(ctx context.Context, _ *mcp.CallToolRequest, a filesArgs) (*mcp.CallToolResult, any, error) {
	if err := need("run", a.Run); err != nil {
		return nil, nil, err
	}
	files, err := runs.Files(ctx, t.Client, t.Store, a.Run, a.Step)
	if err != nil {
		return nil, nil, toolError(a.Run, err)
	}
	return reply(map[string]any{"files": files})
}

func (t *tools) listPending(ctx context.Context, _ *mcp.CallToolRequest, a runArgs) (*mcp.CallToolResult, any, error) {
	if err := need("run", a.Run); err != nil {
		return nil, nil, err
	}
	steps, err := runs.Pending(ctx, t.Client, a.Run)
	if err != nil {
		return nil, nil, toolError(a.Run, err)
	}
	out := []pendingView{}
	for _, p := range steps {
		pv := pendingView{Step: p.Step, Since: p.Since, Attempts: p.Attempts, Recovery: p.Recovery}
		details := map[string]any{}
		if p.Error != nil {
			pv.ErrorType, pv.Error = p.Error.Type, p.Error.Message
			if d, ok := p.Error.Details.(map[string]any); ok {
				details = d
			}
		}
		pv.ExitCode = details["exit_code"]
		pv.StderrTail = t.tail(a.Run, p.Step, p.Attempts, "stderr", details)
		pv.StdoutTail = t.tail(a.Run, p.Step, p.Attempts, "stdout", details)
		out = append(out, pv)
	}
	hint := "classify each with classify_step (retry, fail or skip, and a reason)"
	if len(out) == 0 {
		hint = "no step is waiting for a classification"
	}
	// A worker older than approvals answers no such query: none wait.
	approvals, _ := runs.Approvals(ctx, t.Client, a.Run)
	if approvals == nil {
		approvals = []engine.WaitingApproval{}
	}
	if len(approvals) > 0 {
		hint += "; decide each approval with approve_step (inputs, a reason) or reject_step (a reason)"
	}
	return reply(map[string]any{"run": a.Run, "pending_failed": out, "approvals": approvals, "next": hint})
}

// tail is the last lines of an attempt's stream: from the log file the
// failure names or the log directory, else the tail the error carries.
func (t *tools) tail(run, step string, attempt int, stream string, details map[string]any) string {
	paths := []string{}
	if p, ok := details[stream+"_log"].(string); ok && p != "" {
		paths = append(paths, p)
	}
	paths = append(paths, filepath.Join(activities.RunLogDir(t.LogDir, run, ""), step, fmt.Sprintf("attempt-%d.%s", attempt, stream)))
	for _, p := range paths {
		if b, err := t.logRoot().readTail(p, mcpLogChunkMax); err == nil {
			return lastLines(string(b), mcpTailLines)
		}
	}
	if s, ok := details[stream].(string); ok {
		return lastLines(s, mcpTailLines)
	}
	return ""
}

func lastLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines[max(0, len(lines)-n):], "")
}

func (t *tools) stepLogs(_ context.Context, _ *mcp.CallToolRequest, a stepLogsArgs) (*mcp.CallToolResult, any, error) {
	if err := need("run", a.Run, "step", a.Step); err != nil {
		return nil, nil, err
	}
	for what, name := range map[string]string{"run": a.Run, "step": a.Step} {
		if err := spec.CheckPathName(what, name); err != nil {
			return nil, nil, err
		}
	}
	stream := a.Stream
	if stream == "" {
		stream = "stderr"
	}
	if stream != "stdout" && stream != "stderr" {
		return nil, nil, fmt.Errorf("stream %q: give stdout or stderr", stream)
	}
	dir := filepath.Join(activities.RunLogDir(t.LogDir, a.Run, ""), a.Step)
	attempts := runs.LoggedAttempts(dir)
	if len(attempts) == 0 {
		return nil, nil, fmt.Errorf("no logs for run %q step %q in %s (logs stay on the machine of the worker that ran the step)", a.Run, a.Step, t.LogDir)
	}
	n := attempts[len(attempts)-1]
	if a.Attempt != 0 {
		n = a.Attempt
	}
	limit := a.Limit
	if limit <= 0 {
		limit = mcpLogChunk
	}
	limit = min(limit, mcpLogChunkMax)
	path := filepath.Join(dir, fmt.Sprintf("attempt-%d.%s", n, stream))
	f, fi, err := t.logRoot().openLog(path)
	if err != nil {
		return nil, nil, fmt.Errorf("attempt %d: %s (attempts logged: %v)", n, err, attempts)
	}
	defer f.Close()
	if a.Offset < 0 || a.Offset > fi.Size() {
		return nil, nil, fmt.Errorf("offset %d: the log has %d bytes", a.Offset, fi.Size())
	}
	buf := make([]byte, limit)
	got, err := f.ReadAt(buf, a.Offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, err
	}
	v := stepLogsView{Attempt: n, Stream: stream, Path: path, Size: fi.Size(), Offset: a.Offset, Text: string(buf[:got]), AttemptsLogged: attempts}
	if end := a.Offset + int64(got); end < fi.Size() {
		v.More, v.NextOffset = true, end
	}
	return reply(v)
}

func (t *tools) validate(_ context.Context, _ *mcp.CallToolRequest, a validateArgs) (*mcp.CallToolResult, any, error) {
	var pb *spec.Playbook
	var err error
	switch {
	case (a.File == "") == (a.Text == ""):
		return nil, nil, errors.New("give either file or text")
	case a.File != "":
		pb, err = t.Root.loadFile(a.File)
	default:
		pb, err = t.Root.loadText("inline.yaml", a.Text)
	}
	if err != nil {
		return reply(map[string]any{"ok": false, "errors": strings.Split(strings.TrimSpace(err.Error()), "\n")})
	}
	answer := map[string]any{"ok": true, "playbook": pb.Name, "steps": len(pb.Steps) - 1}
	if len(pb.Warnings) > 0 {
		answer["warnings"] = pb.Warnings // what `validate` prints on stderr
	}
	return reply(answer)
}

func (t *tools) classify(ctx context.Context, _ *mcp.CallToolRequest, a classifyArgs) (*mcp.CallToolResult, any, error) {
	if !t.AllowWrite {
		return nil, nil, errors.New(mcpWriteRefusal)
	}
	if err := need("run", a.Run, "step", a.Step, "action", a.Action, "reason", a.Reason); err != nil {
		return nil, nil, err
	}
	by, err := t.who(a.By)
	if err != nil {
		return nil, nil, err
	}
	answer, err := runs.Classify(ctx, t.Client, a.Run, a.Step, a.Action, a.Reason, by, "")
	if err != nil {
		return nil, nil, toolError(a.Run, err)
	}
	return reply(map[string]any{"run": a.Run, "step": a.Step, "action": a.Action, "reason": a.Reason, "by": by, "result": answer})
}

func (t *tools) approve(ctx context.Context, _ *mcp.CallToolRequest, a approveArgs) (*mcp.CallToolResult, any, error) {
	return t.decide(ctx, contract.ApprovalDecision{Step: a.Step, Decision: contract.DecisionApprove, Inputs: a.Inputs, By: a.By, Reason: a.Reason}, a.Run)
}

func (t *tools) reject(ctx context.Context, _ *mcp.CallToolRequest, a rejectArgs) (*mcp.CallToolResult, any, error) {
	return t.decide(ctx, contract.ApprovalDecision{Step: a.Step, Decision: contract.DecisionReject, By: a.By, Reason: a.Reason}, a.Run)
}

// who is whose name a decision of the agent's bears: mcp, or a person
// the server was started to act for (--act-for); an agent does not choose
// its own name. Approvals, classifications and retries alike.
func (t *tools) who(by string) (string, error) {
	switch {
	case by == "":
		return mcpWho, nil
	case by != mcpWho && !slices.Contains(t.ActFor, by):
		return "", fmt.Errorf("this MCP server decides as %s: it may decide for %q only when started with --act-for %s; nothing was sent", mcpWho, by, by)
	}
	return by, nil
}

// decide sends an approval decision; the run's validator refuses what
// cannot apply, and the refusal is the tool's error.
func (t *tools) decide(ctx context.Context, d contract.ApprovalDecision, run string) (*mcp.CallToolResult, any, error) {
	if !t.AllowWrite {
		return nil, nil, errors.New(mcpWriteRefusal)
	}
	if err := need("run", run, "step", d.Step, "reason", d.Reason); err != nil {
		return nil, nil, err
	}
	by, err := t.who(d.By)
	if err != nil {
		return nil, nil, err
	}
	d.By = by
	if err := contract.CheckDecision(d); err != nil {
		return nil, nil, err
	}
	answer, err := runs.DecideApproval(ctx, t.Client, run, d)
	if err != nil {
		return nil, nil, toolError(run, err)
	}
	return reply(map[string]any{"run": run, "step": d.Step, "decision": d.Decision, "inputs": d.Inputs, "reason": d.Reason, "by": d.By, "result": answer})
}

func (t *tools) retryRun(ctx context.Context, _ *mcp.CallToolRequest, a retryArgs) (*mcp.CallToolResult, any, error) {
	if !t.AllowWrite {
		return nil, nil, errors.New(mcpWriteRefusal)
	}
	if err := need("run", a.Run, "reason", a.Reason); err != nil {
		return nil, nil, err
	}
	req, err := retryRequest(ctx, t.Client, t.Root, a)
	if err != nil {
		return nil, nil, err
	}
	if req.By, err = t.who(a.By); err != nil {
		return nil, nil, err
	}
	req.TaskQueue, req.Check, req.LargeValues = t.TaskQueue, t.Check, t.LargeValues
	if t.LargeValues {
		// Store is the workers' (--store given, or $PLAYBOOK_STORE): the
		// retry looks there for the files of the steps it would reuse.
		req.Store = t.Store
	}
	r, err := runs.Retry(ctx, t.Client, t.Namespace, req)
	if err != nil {
		return nil, nil, toolError(a.Run, err)
	}
	return reply(map[string]any{"retried": a.Run, "run": r.Run.GetID(), "run_id": r.Run.GetRunID(), "reused": r.Reused, "plan": r.Plan.Decisions, "reason": a.Reason, "by": req.By,
		"next": "follow it with run_status " + r.Run.GetID()})
}

func (t *tools) cancelRun(ctx context.Context, _ *mcp.CallToolRequest, a cancelArgs) (*mcp.CallToolResult, any, error) {
	if !t.AllowWrite {
		return nil, nil, errors.New(mcpWriteRefusal)
	}
	if err := need("run", a.Run, "reason", a.Reason); err != nil {
		return nil, nil, err
	}
	// The reason reaches the run's aggregate and events (cancel_reason), as
	// `playbook cancel --reason` does.
	reason := mcpWho + ": " + a.Reason
	if err := contract.CheckSize("the reason", len(reason)); err != nil {
		return nil, nil, err
	}
	if err := runs.Cancel(ctx, t.Client, t.Namespace, a.Run, reason); err != nil {
		return nil, nil, toolError(a.Run, err)
	}
	return reply(map[string]any{"run": a.Run, "cancel_requested": true, "reason": a.Reason, "by": mcpWho,
		"next": "running steps are being cancelled; end will run (after the cleanup steps, if any). Follow it with run_status " + a.Run})
}
