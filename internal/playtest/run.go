package playtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"playbook/activities"
	"playbook/internal/codec"
	"playbook/internal/quietlog"
	"playbook/internal/userfile"
	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
	"playbook/interpreter/playbookwf"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
	"playbook/submit"
	"playbook/worker"
)

// Options say which cases run and how.
type Options struct {
	// Run picks the cases whose name it matches. Optional: nil runs all.
	Run *regexp.Regexp
	// Stuck is how long, in wall time, a case may wait with nothing left
	// to happen (an approval nobody decides) before it fails. Optional:
	// default 10 s.
	Stuck time.Duration
	// Read reads test files and playbooks by absolute path. Optional:
	// default submit.ReadPlaybook; the MCP server's keeps to its root.
	Read func(abs string) ([]byte, error)
	// NoReal ignores real: (every step that would touch the world must be
	// mocked), for callers that must start nothing, as the MCP server.
	NoReal bool
	// Root is the directory the test files and the playbooks they name
	// must be under (Under): one outside is refused the same way whether
	// or not it exists. Optional: "" reads anywhere Read does.
	Root string
	// plant runs at the start of every workflow of a case's run: a test's
	// way to make the workflow decide differently from one run to the next.
	plant func(workflow.Context)
}

// Result is one case's outcome.
type Result struct {
	File     string        `json:"file"`
	Line     int           `json:"line"`
	Case     string        `json:"case"`
	Passed   bool          `json:"passed"`
	Problems []string      `json:"problems,omitempty"`
	Steps    string        `json:"steps_table,omitempty"`
	Log      []string      `json:"log,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	// Aggregate is the simulated run's aggregate.
	Aggregate *contract.Aggregate `json:"aggregate,omitempty"`
	// RanForReal lists the steps that ran their tool for real (real:).
	RanForReal []string `json:"ran_for_real,omitempty"`
}

// Suite is a test file loaded with its playbook.
type Suite struct {
	File  *File
	Input contract.Input
	pb    *spec.Playbook
	// workloads are the cases' workloads, input then set, checked.
	workloads map[*Case]map[string]any
	// histories are the cases' recorded histories (Case.History), read.
	histories map[*Case]*historypb.History
}

// readInput reads a case's input file: a JSON object of workload values.
func readInput(path string, read func(string) ([]byte, error), into *map[string]any) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	b, err := read(abs)
	if err != nil {
		return unwrap(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	return nil
}

// Load reads a test file and the playbook it tests, as a submission
// would, and checks that the cases name the playbook's steps; every
// mistake is one line of a *MalformedError.
func Load(path string) (*Suite, error) { return LoadWith(path, Options{}) }

// LoadWith is Load reading files with opts.Read.
func LoadWith(path string, opts Options) (*Suite, error) {
	read := opts.Read
	if read == nil {
		read = submit.ReadPlaybook
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if opts.Root != "" {
		if err := Under(opts.Root, abs); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		read = readUnder(opts.Root, read)
	}
	text, err := read(abs)
	if err != nil {
		return nil, err
	}
	f, err := parseFile(path, text, opts.Root)
	var bad *MalformedError
	if f == nil || err != nil && !errors.As(err, &bad) {
		return nil, err
	}
	malformed := func(more ...string) error {
		if bad == nil && len(more) == 0 {
			return nil
		}
		var lines []string
		if bad != nil {
			lines = bad.Lines
		}
		return &MalformedError{byLine(path, append(lines, more...))}
	}
	if f.unreadable {
		return nil, malformed() // said by parseFile
	}
	b, err := submit.LoadBundle(f.Playbook, read)
	if err != nil {
		// The playbook's own mistakes, one line each, as validate says them.
		return nil, malformed(strings.Split(err.Error(), "\n")...)
	}
	in := contract.Input{File: f.Playbook, BaseDir: filepath.Dir(b.RootPath), Source: b.Files[b.RootPath]}
	if len(b.Files) > 1 {
		in.Files = b.Files
	}
	s := &Suite{File: f, Input: in, pb: b.Root, workloads: map[*Case]map[string]any{}, histories: map[*Case]*historypb.History{}}
	lines := s.check(b, read)
	lines = append(lines, s.readHistories(opts.Root)...)
	if len(lines) > 0 || bad != nil {
		return nil, malformed(lines...)
	}
	return s, nil
}

// readHistories reads the cases' recorded histories, each a regular file
// within worker.MaxHistoryFile (under root, when given).
func (s *Suite) readHistories(root string) []string {
	errs := &fileErrors{path: s.File.Path}
	read := func(abs string) ([]byte, error) { return userfile.Read(abs, worker.MaxHistoryFile, "a history") }
	if root != "" {
		read = readUnder(root, read)
	}
	for _, c := range s.File.Cases {
		if c.History == "" {
			continue
		}
		path := c.History
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(s.File.Path), path)
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			errs.add(c.Line, c.Name, "history %s: %v", c.History, err)
			continue
		}
		b, err := read(abs)
		if err != nil {
			errs.add(c.Line, c.Name, "history %s: %v", c.History, unwrap(err))
			continue
		}
		h, err := worker.HistoryFromJSON(b)
		if err != nil {
			errs.add(c.Line, c.Name, "history %s: %v", c.History, err)
			continue
		}
		s.histories[c] = h
	}
	return errs.lines
}

// replay replays a case's recorded history through the current workflow,
// with the codec key PLAYBOOK_CODEC_KEY_FILE names when its payloads are
// encrypted.
func (s *Suite) replay(c *Case) []string {
	h := s.histories[c]
	if h == nil {
		return nil
	}
	keys, err := codec.Load("")
	if err != nil {
		return []string{fmt.Sprintf("history %s: %v", c.History, err)}
	}
	if err := worker.ReplayWithCodec(h, quietlog.New(), keys); err != nil {
		where := ""
		if at := worker.DivergingEvent(h, err); at != "" {
			where = " at " + at
		}
		return []string{fmt.Sprintf("history %s: the recorded run no longer replays through this build%s: %s", c.History, where, expr.FirstLine(err.Error()))}
	}
	return nil
}

// check refuses names the playbook does not have.
func (s *Suite) check(b *submit.Bundle, read func(string) ([]byte, error)) []string {
	errs := &fileErrors{path: s.File.Path}
	for _, c := range s.File.Cases {
		w := map[string]any{}
		if c.Input != "" {
			if err := readInput(filepath.Join(filepath.Dir(s.File.Path), c.Input), read, &w); err != nil {
				errs.add(c.Line, c.Name, "input %s: %v", c.Input, err)
			}
		}
		maps.Copy(w, c.Set)
		if len(w) > 0 {
			converted, err := submit.CheckOverrides(s.pb, w)
			if err != nil {
				errs.add(c.Line, c.Name, "set: %v", err)
			}
			s.workloads[c] = converted
		}
		var checkMocks func(pb *spec.Playbook, dir string, mocks map[string]*StepMock, prefix string)
		checkMocks = func(pb *spec.Playbook, dir string, mocks map[string]*StepMock, prefix string) {
			for name, m := range mocks {
				st := pb.Step(name)
				if st == nil {
					errs.add(m.Line, c.Name, "mocks: %s has no step %q", pb.Name, prefix+name)
					continue
				}
				if st.Tool == nil || !mockable(st.Tool.Kind) {
					kind := "no tool"
					if st.Tool != nil {
						kind = "kind " + st.Tool.Kind
					}
					errs.add(m.Line, c.Name, "mocks: step %q is decided in the workflow (%s) and runs as it is: a mock of it would change nothing; mock the steps it reads, or send its events", prefix+name, kind)
					continue
				}
				if msg := badResult(st.Tool.Kind, m); msg != "" {
					errs.add(m.Line, c.Name, "mocks: step %q: %s", prefix+name, msg)
				}
				if (m.Child != nil || m.Mocks != nil) && st.Tool.Kind != "playbook" {
					errs.add(m.Line, c.Name, "mocks: step %q is not a sub-playbook: mock its attempts (result, error, lost, attempts)", prefix+name)
				}
				m.timeout = st.Timeout
				if m.Elements != nil && st.Loop == nil {
					errs.add(m.Line, c.Name, "mocks: step %q has no loop: elements are a loop's", prefix+name)
				}
				if st.Loop != nil && slices.ContainsFunc(m.Attempts, func(a *Attempt) bool { return a.Takes > 0 }) {
					errs.add(m.Line, c.Name, "mocks: step %q is a loop: give takes: to its elements' mocks (elements: {0: ...})", prefix+name)
				}
				if st.Loop != nil {
					for _, line := range m.compileWhen(st.Loop) {
						errs.add(line.line, c.Name, "mocks: step %q: elements %s", prefix+name, line.msg)
					}
				}
				if m.Mocks != nil && st.Tool.Kind == "playbook" {
					if rel, ok := st.Tool.Spec["path"].(string); ok && !expr.IsTemplate(rel) {
						child := spec.SubPlaybookPath(dir, rel)
						if src, ok := b.Files[child]; ok {
							if cpb, err := spec.Parse(child, []byte(src)); err == nil {
								checkMocks(cpb, filepath.Dir(child), m.Mocks, prefix+name+".")
							}
						}
					}
				}
			}
		}
		checkMocks(s.pb, s.Input.BaseDir, c.Mocks, "")
		for name := range c.Real {
			if !strings.Contains(name, ".") && s.pb.Step(name) == nil {
				errs.add(c.Line, c.Name, "real: %s has no step %q", s.pb.Name, name)
			}
		}
		for name, x := range c.Expect.Steps {
			if s.pb.Step(name) == nil {
				errs.add(x.Line, c.Name, "expect.steps: %s has no step %q", s.pb.Name, name)
			}
		}
		for _, a := range c.Expect.Asserts {
			for _, name := range a.expr.StepRefs {
				if s.pb.Step(name) == nil {
					errs.add(a.Line, c.Name, "assert %q: %s has no step %q", a.Source, s.pb.Name, name)
				}
			}
		}
		for _, name := range c.Expect.Order {
			if s.pb.Step(name) == nil {
				errs.add(c.Line, c.Name, "expect.started: %s has no step %q", s.pb.Name, name)
			}
		}
		deadlines := 0
		for _, e := range c.Events {
			if e.Kind == "deadline" && e.After != nil {
				if deadlines++; deadlines > 1 {
					errs.add(e.Line, c.Name, "deadline: a run's deadline passes once")
				}
				if s.pb.Timeout > 0 && *e.After >= s.pb.Timeout {
					errs.add(e.Line, c.Name, "deadline: the playbook's own deadline (timeout: %s) passes first: after must be earlier", s.pb.Timeout)
				}
			}
			step := e.Step
			if e.Kind == "send" {
				step = ""
				if e.Step != "" && !waitsForEvent(s.pb, e.Step) {
					errs.add(e.Line, c.Name, "send: no wait_event step of %s waits for event %q", s.pb.Name, e.Step)
				}
			}
			for _, name := range []string{step, e.OnStart} {
				if name != "" && s.pb.Step(name) == nil {
					errs.add(e.Line, c.Name, "%s: %s has no step %q", e.Kind, s.pb.Name, name)
				}
			}
			if e.Kind == "approve" || e.Kind == "reject" {
				if st := s.pb.Step(e.Step); st != nil && st.Tool.Kind != "approval" {
					errs.add(e.Line, c.Name, "%s: step %q is not an approval step", e.Kind, e.Step)
				}
			}
		}
	}
	return errs.lines
}

// Cases are the suite's cases that opts pick.
func (s *Suite) Cases(opts Options) []*Case {
	var out []*Case
	for _, c := range s.File.Cases {
		if opts.Run == nil || opts.Run.MatchString(c.Name) {
			out = append(out, c)
		}
	}
	return out
}

// eventLog is a case's log: mocked attempts and events, in order.
type eventLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *eventLog) add(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, a...))
}

// RunCase runs one case through the generic workflow in the SDK's test
// environment and checks what it expects.
func (s *Suite) RunCase(c *Case, opts Options) Result {
	began := time.Now()
	res := Result{File: s.File.Path, Line: c.Line, Case: c.Name}
	sim, err := s.simulate(c, opts, nil)
	res.Duration = time.Since(began)
	if sim != nil {
		res.Log = sim.log
		res.RanForReal = sim.ran
		res.Aggregate = sim.agg
	}
	if err != nil {
		res.Problems = []string{err.Error()}
		return res
	}
	res.Problems = append(res.Problems, sim.unmocked...)
	res.Problems = append(res.Problems, c.Expect.check(sim)...)
	res.Problems = append(res.Problems, sim.eventsLeft...)
	res.Steps = stepsTable(s.pb, sim.agg)
	if len(res.Problems) == 0 {
		res.Problems = s.determinism(c, opts, sim)
	}
	if len(res.Problems) == 0 {
		res.Problems = s.replay(c)
	}
	res.Duration = time.Since(began)
	res.Passed = len(res.Problems) == 0
	return res
}

// determinism runs a passing case again, giving each activity's result
// to its workflow in the order the first run gave them (deliveries), and
// compares each workflow's commands and the results it was given, in
// order (diverged): the same mocks and events in the same order must give
// the same commands in the same order, as a replay of the first run's
// history through the current workflow requires. A case whose steps ran
// for real is not run twice (their side effects would be).
func (s *Suite) determinism(c *Case, opts Options, first *simulation) []string {
	if len(first.ran) > 0 {
		return nil
	}
	second, err := s.simulate(c, opts, first.order)
	if err != nil {
		return []string{"determinism: the case's second run failed: " + err.Error()}
	}
	if d := diverged(first.trace, second.trace); d != "" {
		return []string{"determinism: run again with the same results in the same order, the run issued other commands, or in another order " +
			"(a replay of its history would fail): " + d}
	}
	return nil
}

// simulation is what a case's run showed.
type simulation struct {
	agg        *contract.Aggregate
	workload   map[string]any
	started    []string
	log        []string
	unmocked   []string
	ran        []string
	eventsLeft []string
	trace      []string
	// order is the order in which activities' results reached their
	// workflows.
	order []delivery
}

// rootID is the workflow ID of every case's run.
const rootID = "test"

// simulate runs a case; given follow, a first run's order of results,
// its activities' results reach their workflows in that order.
func (s *Suite) simulate(c *Case, opts Options, follow []delivery) (sim *simulation, err error) {
	log := &eventLog{}
	st := &stand{rootID: rootID, c: c, log: log, noReal: opts.NoReal, plant: opts.plant, inputs: map[string]contract.Input{}}
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quietlog.New())
	env := suite.NewTestWorkflowEnvironment()
	st.env = env
	env.SetTestTimeout(orDuration(opts.Stuck, 10*time.Second))
	env.RegisterWorkflowWithOptions(st.childWorkflow, workflow.RegisterOptions{Name: contract.WorkflowName})
	env.RegisterWorkflowWithOptions(playbookwf.PlaybookLoopBatch, workflow.RegisterOptions{Name: contract.LoopBatchWorkflowName})
	env.RegisterWorkflowWithOptions(playbookwf.PlaybookLoop, workflow.RegisterOptions{Name: contract.LoopWorkflowName})
	logDir, err := os.MkdirTemp("", "playbook-test-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(logDir)
	in := s.Input
	in.Workload = s.workloads[c]
	// As `playbook run` starts it: its status is kept in its search
	// attributes (waiting while a step waits for a person or an event).
	in.Index = true
	lt := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if c.LogicalTime != nil {
		lt = *c.LogicalTime
	}
	in.LogicalTime = &lt
	env.SetStartTime(lt)
	in.Deadline = s.deadline(c, lt)

	order := newDeliveries(env, lt, follow)
	acts := &activities.Activities{LogDir: logDir, Stand: st}
	runStep := held(order, acts.RunStep)
	env.RegisterActivityWithOptions(runStep, activity.RegisterOptions{Name: contract.RunStepName})
	env.RegisterActivityWithOptions(held(order, func(_ context.Context, in contract.NotifyInput) (struct{}, error) {
		log.add("webhook %s to %s (not sent: a test sends no webhook)", in.Event, contract.Redact(in.Webhook))
		return struct{}{}, nil
	}), activity.RegisterOptions{Name: contract.NotifyName})
	env.RegisterActivityWithOptions(held(order, st.outcomeOf), activity.RegisterOptions{Name: mockedOutcomeName})
	// A test runs one run: its concurrency limit always has a slot for it
	// (docs/TESTING.md).
	env.RegisterActivityWithOptions(func(context.Context, contract.SlotRequest) (contract.SlotAnswer, error) {
		return contract.SlotAnswer{Granted: true}, nil
	}, activity.RegisterOptions{Name: contract.AcquireSlotName})
	st.paceAttempts(env, runStep)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: rootID})
	tr := &tracer{}
	env.SetWorkerOptions(workerOptions(tr))

	ev := &events{env: env, log: log, pending: slices.Clone(c.Events), start: lt, trace: tr}
	ev.arm()
	wake := func() { env.RegisterDelayedCallback(ev.check, 0) }
	// A run that starts waiting for a person or an event updates its
	// status (waiting): the case's next decision may be due then, when
	// nothing else wakes the events up (an approval without a timeout).
	tr.indexed = wake
	env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, err error) {
		order.delivered(info.WorkflowExecution.ID, info.ActivityID)
		tr.note(info.WorkflowExecution.ID, "given activity %s's %s", info.ActivityID, outcome(err))
		wake()
	})
	// A local activity's attempts run on goroutines of their own too, and
	// a failed one's retry delay is a timer in the test environment
	// (summarised "Sleep"): its results are held to the first run's order
	// as an activity's are. (The test environment gives this listener no
	// error, failed attempts included.)
	env.SetOnLocalActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, _ error) {
		order.delivered(info.WorkflowExecution.ID, info.ActivityID)
		tr.note(info.WorkflowExecution.ID, "given local activity %s's end", info.ActivityID)
		wake()
	})
	env.SetOnTimerFiredListener(func(string) { wake() })
	env.SetOnTimerScheduledListener(func(string, time.Duration) { wake() })
	env.SetOnChildWorkflowCompletedListener(func(info *workflow.Info, _ converter.EncodedValue, err error) {
		if info.ParentWorkflowExecution != nil {
			tr.note(info.ParentWorkflowExecution.ID, "given child %s's %s", info.WorkflowExecution.ID, outcome(err))
		}
		wake()
	})
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) { ev.started(info.ActivityID) })
	env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, _ converter.EncodedValues) {
		ev.started(strings.TrimPrefix(info.WorkflowExecution.ID, rootID+"."))
	})

	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprint(r)
			if strings.Contains(msg, "test timeout") {
				err = fmt.Errorf("the run never ended: it waits for something no event of the case brings (an approval, a classification?)")
			} else {
				err = fmt.Errorf("the run could not be simulated: %s", expr.FirstLine(msg))
			}
		}
	}()
	env.ExecuteWorkflow(contract.WorkflowName, in)
	if !env.IsWorkflowCompleted() {
		return nil, errors.New("the run never ended")
	}
	sim = &simulation{log: log.lines, unmocked: st.unmocked, ran: st.ran, workload: spec.MergeWorkload(s.pb.Workload, in.Workload), trace: tr.lines(), order: order.order()}
	sim.agg, err = aggregateOf(env)
	if err != nil {
		if waits := waitingWhenEnded(env); waits != "" {
			err = fmt.Errorf("%v; it was waiting: %s", err, waits)
		}
		return sim, err
	}
	if v, qerr := env.QueryWorkflow(contract.QueryEvents, 0, 0); qerr == nil {
		var evs []engine.Event
		if v.Get(&evs) == nil {
			for _, e := range evs {
				if e.Type == "step_started" {
					sim.started = append(sim.started, e.Step)
				}
				line := fmt.Sprintf("%s %s", e.Time.Sub(lt).String(), e.Type)
				if e.Step != "" {
					line += " " + e.Step
				}
				if e.Message != "" {
					line += ": " + e.Message
				}
				sim.log = append(sim.log, line)
			}
		}
	}
	sim.eventsLeft = append(sim.eventsLeft, ev.refused...)
	for _, e := range ev.pending {
		sim.eventsLeft = append(sim.eventsLeft, fmt.Sprintf("event at line %d (%s) never happened: %s", e.Line, e.Kind, ev.why(e)))
	}
	return sim, nil
}

// deadline is the deadline a case's deadline event sets: the run takes it
// as one inherited from a parent, so that its own deadline handling passes
// it at that moment; it reads as the playbook's own timeout when it has
// one, else as the event's time.
func (s *Suite) deadline(c *Case, start time.Time) *contract.Deadline {
	for _, e := range c.Events {
		if e.Kind == "deadline" && e.After != nil {
			timeout := e.After.String()
			if s.pb.Timeout > 0 {
				timeout = s.pb.Timeout.String()
			}
			return &contract.Deadline{At: start.Add(*e.After), Timeout: timeout, SetBy: rootID}
		}
	}
	return nil
}

func outcome(err error) string {
	if err != nil {
		return "failure"
	}
	return "result"
}

func orDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// aggregateOf reads the run's aggregate, whatever its outcome.
func aggregateOf(env *testsuite.TestWorkflowEnvironment) (*contract.Aggregate, error) {
	var agg *contract.Aggregate
	err := env.GetWorkflowError()
	var appErr *temporal.ApplicationError
	var canErr *temporal.CanceledError
	switch {
	case err == nil:
		if e := env.GetWorkflowResult(&agg); e != nil {
			return nil, e
		}
	case errors.As(err, &canErr):
		if e := canErr.Details(&agg); e != nil {
			return nil, e
		}
	case errors.As(err, &appErr) && appErr.Type() == contract.FailedErrorType:
		if e := appErr.Details(&agg); e != nil {
			return nil, e
		}
	default:
		return nil, fmt.Errorf("the run ended without an aggregate: %v", err)
	}
	return agg, nil
}

// byLine puts a test file's mistakes in file order; other lines (the
// playbook's own) stay after them.
func byLine(path string, lines []string) []string {
	line := func(s string) int {
		rest, ok := strings.CutPrefix(s, path+":")
		if !ok {
			return 1 << 30
		}
		digits, _, _ := strings.Cut(rest, ":")
		n, err := strconv.Atoi(digits)
		if err != nil {
			return 0
		}
		return n
	}
	out := slices.Clone(lines)
	slices.SortStableFunc(out, func(a, b string) int { return line(a) - line(b) })
	return out
}

// waitsForEvent tells whether a wait_event step of pb waits for event.
func waitsForEvent(pb *spec.Playbook, event string) bool {
	for _, st := range pb.Steps {
		if st.Tool != nil && st.Tool.Kind == spec.WaitEventKind && st.Tool.WaitEvent().Event == event {
			return true
		}
	}
	return false
}

// mockable tells whether a step of a tool kind can be mocked: one whose
// tool runs on a worker (a process, an http request) or as a child run.
func mockable(kind string) bool {
	return spec.RunsProcess(kind) || kind == "http" || kind == "playbook"
}

// badResult says what is wrong with the results a mock gives a step of a
// tool kind whose result has a shape (shell, http): a mapping with a field
// a real result has not (a typo: stdot, which would leave stdout empty);
// "" when nothing is.
func badResult(kind string, m *StepMock) string {
	shape := spec.ResultShape(kind)
	if shape == nil {
		return ""
	}
	fields := slices.Sorted(maps.Keys(shape))
	var check func(m *StepMock) string
	check = func(m *StepMock) string {
		for _, a := range m.Attempts {
			if a.Result == nil {
				continue
			}
			r, ok := a.Result.(map[string]any)
			if !ok {
				continue // a value of its own, for the steps that read it
			}
			for _, k := range slices.Sorted(maps.Keys(r)) {
				if _, known := shape[k]; !known {
					return fmt.Sprintf("result.%s is not a field of a %s step's result (%s)", k, kind, strings.Join(fields, ", "))
				}
			}
		}
		for _, i := range slices.Sorted(maps.Keys(m.Elements)) {
			if msg := check(m.Elements[i]); msg != "" {
				return msg
			}
		}
		for _, w := range m.When {
			if msg := check(w.Mock); msg != "" {
				return msg
			}
		}
		return ""
	}
	return check(m)
}

// waitingWhenEnded says which steps of a run that ended without its
// aggregate (its time ran out) were waiting for something no event of the
// case brought, and the event that would: "step load waits in
// pending_failed for a classification (an event classify: load)"; "" when
// none was, or the run's state cannot be read.
func waitingWhenEnded(env *testsuite.TestWorkflowEnvironment) string {
	v, err := env.QueryWorkflow(contract.QueryState)
	var agg contract.Aggregate
	if err != nil || v.Get(&agg) != nil {
		return ""
	}
	var waits []string
	for _, name := range slices.Sorted(maps.Keys(agg.Steps)) {
		st := agg.Steps[name]
		switch {
		case st.Status == contract.StatusPendingFailed:
			waits = append(waits, fmt.Sprintf("step %s waits in pending_failed for a classification (an event classify: %s)", name, name))
		case st.Waiting != nil && st.Waiting.For == "approval":
			waits = append(waits, fmt.Sprintf("step %s waits for approval (an event approve: %s, or reject: %s)", name, name, name))
		case st.Waiting != nil:
			event, _ := strings.CutPrefix(st.Waiting.For, "event ")
			waits = append(waits, fmt.Sprintf("step %s waits for event %s (an event send: %s)", name, event, event))
		}
	}
	return strings.Join(waits, "; ")
}
