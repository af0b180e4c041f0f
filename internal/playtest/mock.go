package playtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"playbook/activities"
	"playbook/interpreter/contract"
	"playbook/interpreter/playbookwf"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
)

// touchesWorld says what a step of a kind would do for real, for the kinds
// that leave the workflow's process; the others run as they are.
var touchesWorld = map[string]string{
	"shell":  "run a shell command",
	"python": "run a python process",
	"http":   "send an http request",
}

// stand is a case's mocks as the activity sees them: it stands in for the
// tools of mocked steps and refuses to run an unmocked one that touches
// the world.
type stand struct {
	rootID string
	c      *Case
	log    *eventLog
	// noReal: real: is ignored (Options.NoReal).
	noReal bool
	plant  func(workflow.Context)
	env    *testsuite.TestWorkflowEnvironment

	mu sync.Mutex
	// unmocked are the steps that would have touched the world, by path.
	unmocked []string
	// ran are the steps that ran for real (listed under real:).
	ran []string
	// inputs are the run's workflows' inputs, by workflow ID.
	inputs map[string]contract.Input
}

// path is the step's path from the case's run: "load.inner" for step
// inner of the sub-playbook step load.
func (s *stand) path(in contract.StepInput) (parents []string, step string, element int) {
	if rest, ok := strings.CutPrefix(in.WorkflowID, s.rootID+"."); ok {
		parents = strings.Split(rest, ".")
	}
	step, element = in.Step, -1
	if base, idx, ok := strings.Cut(strings.TrimSuffix(in.Step, "]"), "["); ok {
		if i, err := strconv.Atoi(idx); err == nil {
			step, element = base, i
		}
	}
	return parents, step, element
}

// mockOf finds the mock of a step, nil when it has none.
func (s *stand) mockOf(parents []string, step string) *StepMock {
	mocks := s.c.Mocks
	for _, p := range parents {
		m := mocks[p]
		if m == nil {
			return nil
		}
		mocks = m.Mocks
	}
	return mocks[step]
}

func dotted(parents []string, step string) string {
	return strings.Join(append(append([]string{}, parents...), step), ".")
}

// killedExitCode is the exit code of a process its timeout killed (128 +
// SIGTERM).
const killedExitCode = 143

// Attempt implements activities.Stand.
func (s *stand) Attempt(_ context.Context, in contract.StepInput, number int) (activities.ToolResult, bool, bool) {
	parents, step, element := s.path(in)
	name := dotted(parents, step)
	m := s.elementMock(parents, step, element, s.mockOf(parents, step))
	if m == nil || len(m.Attempts) == 0 {
		doing, world := touchesWorld[in.Kind]
		if !world || s.c.Real[name] && !s.noReal {
			s.mu.Lock()
			if world {
				s.ran = append(s.ran, name)
			}
			s.mu.Unlock()
			return activities.ToolResult{}, false, false
		}
		msg := fmt.Sprintf("step %q would %s: mock it, or list it under real:", name, doing)
		if s.c.Real[name] {
			msg = fmt.Sprintf("step %q would %s: real: is off here, mock it", name, doing)
		}
		s.mu.Lock()
		s.unmocked = append(s.unmocked, msg)
		s.mu.Unlock()
		s.log.add("%s attempt %d: %s", in.Step, number, msg)
		return activities.ToolResult{Err: &contract.StepError{Type: contract.ErrTool, Message: msg}}, false, true
	}
	a := m.Attempts[min(number, len(m.Attempts))-1]
	prefix := dotted(parents, in.Step)
	switch {
	case a.Lost:
		s.log.add("%s attempt %d: lost with its worker (mocked)", prefix, number)
		return activities.ToolResult{Err: &contract.StepError{Type: contract.ErrHeartbeatTimeout, Message: fmt.Sprintf("attempt %d was lost: its worker stopped heartbeating", number)}}, true, true
	case in.Timeout > 0 && a.Takes > in.Timeout:
		// As the activity says of an attempt its timeout killed: a
		// process keeps its exit code, 143 after SIGTERM, which exit-code
		// rules match.
		msg := fmt.Sprintf("attempt %d ran past its timeout of %s and was killed", number, in.Timeout)
		s.log.add("%s attempt %d: fails with %s: %s (mocked: it takes %s)", prefix, number, contract.ErrExecutionTimeout, msg, a.Takes)
		o := activities.ToolResult{Err: &contract.StepError{Type: contract.ErrExecutionTimeout, Message: msg}}
		if spec.RunsProcess(in.Kind) {
			code := killedExitCode
			o.ExitCode = &code
			o.Err.Details = map[string]any{"exit_code": code}
		}
		return o, false, true
	case a.Error != nil:
		o := a.Error.toolResult(in.Kind)
		s.log.add("%s attempt %d: fails with %s: %s (mocked)", prefix, number, o.Err.Type, o.Err.Message)
		return o, false, true
	}
	o := activities.ToolResult{Result: processResult(in.Kind, a.Result), Files: mockedFiles(in, a.Files)}
	if r, ok := o.Result.(map[string]any); ok {
		o.ExitCode, o.StatusCode = intField(r, "exit_code"), intField(r, "status_code")
	}
	s.log.add("%s attempt %d: succeeds (mocked)", prefix, number)
	return o, false, true
}

// Recovery implements activities.Stand: a mocked step's recovery script
// does not run; it exits as the failed attempt's mock says (0 by default).
func (s *stand) Recovery(in contract.StepInput, number, exitCode int, script string) (int, bool) {
	parents, step, element := s.path(in)
	m := s.elementMock(parents, step, element, s.mockOf(parents, step))
	code := 0
	if m != nil && len(m.Attempts) > 0 {
		code = m.Attempts[min(number, len(m.Attempts))-1].Recovery
	}
	s.log.add("%s attempt %d: recovery script %s runs (mocked, exits %d) for exit code %d", dotted(parents, in.Step), number, script, code, exitCode)
	return code, true
}

func intField(m map[string]any, key string) *int {
	switch v := m[key].(type) {
	case float64:
		i := int(v)
		return &i
	case int:
		return &v
	}
	return nil
}

// toolResult is the failure a real attempt of the kind would report:
// the same type, message and details' shape.
func (e *MockError) toolResult(kind string) activities.ToolResult {
	o := activities.ToolResult{ExitCode: e.ExitCode, StatusCode: e.StatusCode}
	typ, msg := e.Type, e.Message
	details := map[string]any{}
	switch {
	case e.ExitCode != nil:
		typ = orDefault(typ, contract.ErrExitCode)
		last := lastLine(e.Stderr)
		msg = orDefault(msg, fmt.Sprintf("exited with code %d", *e.ExitCode)+map[bool]string{true: "", false: ": " + last}[last == ""])
		details["exit_code"], details["stdout"], details["stderr"] = *e.ExitCode, e.Stdout, e.Stderr
	case e.StatusCode != nil:
		typ = orDefault(typ, contract.ErrHTTPStatus)
		msg = orDefault(msg, fmt.Sprintf("the request answered %d", *e.StatusCode))
		details["status_code"] = *e.StatusCode
	case kind == "python":
		typ = orDefault(typ, contract.ErrPythonException)
	case kind == "http":
		typ = orDefault(typ, contract.ErrHTTP)
	case kind == "shell":
		typ = orDefault(typ, contract.ErrExitCode)
		one := 1
		o.ExitCode = &one
		details["exit_code"], details["stdout"], details["stderr"] = 1, e.Stdout, e.Stderr
	default:
		typ = orDefault(typ, contract.ErrTool)
	}
	if e.ExitCode == nil && (e.Stdout != "" || e.Stderr != "") {
		details["stdout"], details["stderr"] = e.Stdout, e.Stderr
	}
	msg = orDefault(msg, "the step failed (mocked)")
	o.Err = &contract.StepError{Type: typ, Message: msg, Details: details}
	return o
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// childWorkflow is the generic workflow as a case runs it: a sub-playbook
// mocked whole returns its mocked outcome, any other run is the real one.
func (s *stand) childWorkflow(ctx workflow.Context, in contract.Input) (any, error) {
	if s.plant != nil {
		s.plant(ctx)
	}
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	s.mu.Lock()
	s.inputs[id] = in
	s.mu.Unlock()
	rest, isChild := strings.CutPrefix(id, s.rootID+".")
	if !isChild {
		return playbookwf.Playbook(ctx, in)
	}
	parents := strings.Split(rest, ".")
	if m := s.mockOf(parents[:len(parents)-1], parents[len(parents)-1]); m == nil || m.Child == nil {
		return playbookwf.Playbook(ctx, in)
	}
	// The mocked outcome comes as an activity's result, so that it reaches
	// the parent in the order the deliveries hold results to: a child's
	// workflow starts on a goroutine of its own in the test environment,
	// and one mocked whole, ending in its first task, could otherwise end
	// before or after a sibling's activity as the goroutines happen to run.
	// It gives its outcome even when the parent cancels it, as it did when
	// it ended in its first task: a disconnected context.
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{ActivityID: mockedOutcomeID, StartToCloseTimeout: time.Hour,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	var o mockedOutcome
	if err := workflow.ExecuteActivity(ctx, mockedOutcomeName, id).Get(ctx, &o); err != nil {
		return nil, err
	}
	if o.Failed {
		return nil, temporal.NewApplicationErrorWithOptions("the sub-playbook failed (mocked)", contract.FailedErrorType,
			temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{o.Aggregate}})
	}
	return o.Aggregate, nil
}

// mockedOutcomeName and mockedOutcomeID are the activity that gives a
// sub-playbook mocked whole its outcome; no step is named with a space.
const (
	mockedOutcomeName = "playtest.mockedOutcome"
	mockedOutcomeID   = "mocked outcome"
)

// mockedOutcome is a sub-playbook's mocked outcome: its aggregate, and
// whether it failed.
type mockedOutcome struct {
	Aggregate map[string]any
	Failed    bool
}

// outcomeOf is the activity that gives the sub-playbook run by workflow
// id the outcome its case mocks.
func (s *stand) outcomeOf(_ context.Context, id string) (mockedOutcome, error) {
	parents := strings.Split(strings.TrimPrefix(id, s.rootID+"."), ".")
	m := s.mockOf(parents[:len(parents)-1], parents[len(parents)-1])
	agg := map[string]any{}
	for k, v := range m.Child.Result {
		agg[k] = v
	}
	if agg["status"] == nil {
		agg["status"] = m.Child.Status
	}
	return mockedOutcome{Aggregate: agg, Failed: m.Child.Status == contract.RunFailed}, nil
}

// processResult completes a process step's mocked result as a real one
// reads: exit_code 0, and stdout parsed as json when it is JSON.
func processResult(kind string, v any) any {
	r, ok := v.(map[string]any)
	if !ok || kind != "shell" {
		return v
	}
	out := maps.Clone(r)
	if _, ok := out["exit_code"]; !ok {
		out["exit_code"] = 0.0
	}
	for _, k := range []string{"stdout", "stderr"} {
		if _, ok := out[k]; !ok {
			out[k] = ""
		}
	}
	if _, ok := out["json"]; !ok {
		var parsed any
		if text, _ := out["stdout"].(string); json.Unmarshal([]byte(text), &parsed) == nil {
			out["json"] = parsed
		} else {
			out["json"] = nil
		}
	}
	return out
}

// paceAttempts makes the mocked attempts that take time (takes:) last that
// long on the run's clock, which the test environment moves on while they
// wait: its mocks of the activity, one per such attempt in order, each
// calling the real activity (and so the stand) when its time is up.
func (s *stand) paceAttempts(env *testsuite.TestWorkflowEnvironment, run func(context.Context, contract.StepInput) (*contract.StepOutput, error)) {
	paced := false
	step := func(wfID, name string, attempts []*Attempt, timeout time.Duration) {
		if !slices.ContainsFunc(attempts, func(a *Attempt) bool { return a.Takes > 0 }) {
			return
		}
		paced = true
		match := mock.MatchedBy(func(in contract.StepInput) bool { return in.WorkflowID == wfID && in.Step == name })
		for i, a := range attempts {
			takes := a.Takes
			if timeout > 0 {
				takes = min(takes, timeout) // it is killed then (Attempt)
			}
			call := env.OnActivity(contract.RunStepName, mock.Anything, match).After(takes).Return(run)
			if i < len(attempts)-1 {
				call.Once()
			}
		}
	}
	var walk func(wfID string, mocks map[string]*StepMock)
	walk = func(wfID string, mocks map[string]*StepMock) {
		for _, name := range sortedKeys(mocks) {
			m := mocks[name]
			step(wfID, name, m.Attempts, m.timeout)
			for _, i := range slices.Sorted(maps.Keys(m.Elements)) {
				step(wfID, fmt.Sprintf("%s[%d]", name, i), m.Elements[i].Attempts, m.timeout)
			}
			if m.Mocks != nil {
				walk(wfID+"."+name, m.Mocks)
			}
		}
	}
	walk(s.rootID, s.c.Mocks)
	if paced {
		env.OnActivity(contract.RunStepName, mock.Anything, mock.Anything).Return(run)
	}
}

type lineError struct {
	line int
	msg  string
}

// compileWhen compiles the templates of a loop's elements' mocks in the
// scope the element's tool sees (the run's, the iterator, item and
// loop.index).
func (m *StepMock) compileWhen(loop *spec.Loop) []lineError {
	var out []lineError
	m.loop = loop
	for _, w := range m.When {
		e, err := expr.CompileExprAt(w.Source, w.Line, expr.ScopeStep, true, "item", loop.Iterator, "loop")
		if err != nil {
			out = append(out, lineError{w.Line, err.Error()})
			continue
		}
		w.expr = e
		if slices.ContainsFunc(w.Mock.Attempts, func(a *Attempt) bool { return a.Takes > 0 }) {
			out = append(out, lineError{w.Line, strconv.Quote(w.Source) + ": takes: is given to an element by its index, not by a template"})
		}
	}
	return out
}

// elementMock is the mock of a loop's element: its own by index, else the
// first whose template over its item holds, else the step's.
func (s *stand) elementMock(parents []string, step string, element int, m *StepMock) *StepMock {
	if m == nil || element < 0 {
		return m
	}
	if e := m.Elements[element]; e != nil {
		return e
	}
	if len(m.When) == 0 {
		return m
	}
	name := fmt.Sprintf("%s[%d]", dotted(parents, step), element)
	if m.loop == nil {
		// Not compiled: a sub-playbook whose path is a template, unknown
		// until the run.
		s.problem(fmt.Sprintf("step %q: the elements' mocks by template cannot be matched: its playbook is not known before the run", name))
		return m
	}
	scope, err := s.elementScope(parents, step, element, m.loop)
	if err != nil {
		s.problem(fmt.Sprintf("step %q: the elements' mocks by template cannot be matched: %v", name, err))
		return m
	}
	for _, w := range m.When {
		ok, err := w.expr.EvalBool(scope)
		if err != nil {
			s.problem(fmt.Sprintf("step %q: elements %s (line %d): %v", name, w.Source, w.Line, err))
			continue
		}
		if ok {
			return w.Mock
		}
	}
	return m
}

func (s *stand) problem(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.unmocked, msg) {
		s.unmocked = append(s.unmocked, msg)
	}
}

// elementScope is the scope an element's tool is rendered in: the run's
// state when the element runs (asked of its workflow in the test
// environment's main loop), its item under `item` and the iterator's
// name, and loop.index and loop.length.
func (s *stand) elementScope(parents []string, step string, element int, loop *spec.Loop) (map[string]any, error) {
	id := strings.Join(append([]string{s.rootID}, parents...), ".")
	type answer struct {
		agg *contract.Aggregate
		err error
	}
	ch := make(chan answer, 1)
	s.env.RegisterDelayedCallback(func() {
		var a answer
		v, err := s.env.QueryWorkflowByID(id, contract.QueryState)
		if a.err = err; err == nil {
			a.err = v.Get(&a.agg)
		}
		ch <- a
	}, 0)
	a := <-ch
	if a.err != nil {
		return nil, a.err
	}
	s.mu.Lock()
	in, ok := s.inputs[id]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("workflow %s did not start", id)
	}
	pb, err := spec.Parse(in.File, []byte(in.Source))
	if err != nil {
		return nil, err
	}
	scope := aggregateEnv(a.agg, spec.MergeWorkload(pb.Workload, in.Workload))
	scope["playbook"] = map[string]any{"name": pb.Name, "description": pb.Description}
	items := loop.Items
	if loop.In != nil {
		v, err := loop.In.Eval(scope)
		if err != nil {
			return nil, fmt.Errorf("loop.in %v", err)
		}
		items, _ = v.([]any)
	}
	if element >= len(items) {
		return nil, fmt.Errorf("its loop has %d items", len(items))
	}
	scope["item"], scope[loop.Iterator] = items[element], items[element]
	scope["loop"] = map[string]any{"index": element, "length": len(items)}
	return scope, nil
}

// mockedFiles are the files a mocked attempt hands on, as the run's store
// would name them: under mock://RUN/STEP/, with their content's size and
// sha256, which a later step's inputs.files read (a mocked step takes no
// file: nothing is downloaded).
func mockedFiles(in contract.StepInput, files map[string]string) map[string]contract.FileRef {
	if len(files) == 0 {
		return nil
	}
	out := make(map[string]contract.FileRef, len(files))
	for p, content := range files {
		sum := sha256.Sum256([]byte(content))
		out[p] = contract.FileRef{URI: "mock://" + in.WorkflowID + "/" + in.Step + "/" + p, Bytes: int64(len(content)), SHA256: hex.EncodeToString(sum[:])}
	}
	return out
}
