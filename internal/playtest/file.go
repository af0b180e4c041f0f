// Package playtest runs a playbook's test cases (NAME.test.yaml) through
// the real generic workflow in the SDK's test environment: no server, time
// skipped, every attempt of a step that would touch the world mocked, and
// each mocked attempt judged by the same retry decision as a real one.
//
// It lives beside submit/ rather than in the core: it reads files, loads
// playbooks as a submission does, and drives the workflow and the real
// activity together, so it imports the layers the core may not.
package playtest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
	"playbook/submit"
)

// Suffix ends every test file's name.
const Suffix = ".test.yaml"

// File is one test file: the playbook it tests and its cases.
type File struct {
	Path     string
	Playbook string // as the test file names it, from the working directory
	Cases    []*Case
	// unreadable: the playbook is not there, or not to be read (Under).
	unreadable bool
}

// Case is one scenario: a workload, mocks, events and what to expect.
type Case struct {
	Name  string
	Line  int
	Set   map[string]any
	Input string // a JSON file of workload values, under set
	// History is a recorded history of the case's run (as `playbook
	// history` writes it), which must replay through the current
	// workflow for the case to pass.
	History     string
	LogicalTime *time.Time
	Real        map[string]bool
	Mocks       map[string]*StepMock
	Events      []*Event
	Expect      Expect
}

// StepMock says what a step's attempts do. Exactly one of its forms is
// set: Attempts (per attempt, the last repeating), Elements (a loop's, by
// index, with Attempts for the others), Child (a sub-playbook mocked whole)
// or Mocks (a sub-playbook run with its own steps mocked).
type StepMock struct {
	Line     int
	Attempts []*Attempt
	Elements map[int]*StepMock
	// When are a loop's elements' mocks by a template over the element's
	// item, in file order; an element given by index is not matched.
	When  []*ElementWhen
	Child *ChildMock
	Mocks map[string]*StepMock
	// loop is the mocked step's loop, when When is given (Suite.check).
	loop *spec.Loop
	// timeout is the mocked step's timeout (Suite.check), 0 without one:
	// an attempt that takes longer fails when it passes.
	timeout time.Duration
}

// ElementWhen mocks the elements of a loop for which a template over the
// element's item (`{{ item.region == 'eu' }}`) is true.
type ElementWhen struct {
	Line   int
	Source string
	Mock   *StepMock
	expr   *expr.Expr
}

// Attempt is one mocked attempt: a result, an error, or lost.
type Attempt struct {
	Result   any
	Error    *MockError
	Lost     bool
	Recovery int // the recovery script's exit code, when a rule runs one
	// Takes is how long the attempt runs, on the run's clock.
	Takes time.Duration
	// Files are the files a succeeding attempt hands on, by path, with
	// their content: a later step's inputs.files resolve to them.
	Files map[string]string
}

// MockError is a mocked attempt's failure.
type MockError struct {
	Type       string
	Message    string
	ExitCode   *int
	StatusCode *int
	Stdout     string
	Stderr     string
}

// ChildMock is a sub-playbook's whole outcome.
type ChildMock struct {
	Status string // completed or failed
	Result map[string]any
}

// Event is something that happens to the run: an approval decided, a
// step classified, a cancel or a drain, its deadline passing. It fires
// After the run started when given (a deadline always); else an approval
// or classification fires as soon as its step waits, and a cancel or
// drain when OnStart's step starts (or at once).
type Event struct {
	Line    int
	Kind    string // approve, reject, classify, cancel, drain, deadline, send
	Step    string // send: the event's name
	As      string // classify: retry, fail or skip
	Inputs  map[string]any
	By      string
	Reason  string
	Result  any
	Data    any // send: the event's data
	After   *time.Duration
	OnStart string
}

// Expect is what the case's run must show.
type Expect struct {
	Status  string
	Steps   map[string]*StepExpect
	Order   []string
	Asserts []*Assert
}

// StepExpect is what one step must show; unset fields are not checked.
type StepExpect struct {
	Line         int
	Status       string
	Attempts     *int
	RoutedToEnd  *bool
	SkipReason   *string
	ErrorType    *string
	ErrorMessage *string
	Recovery     *string
}

// Assert is a free expression over the aggregate.
type Assert struct {
	Source string
	Line   int
	expr   *expr.Expr
}

// fileErrors gathers one line per mistake.
type fileErrors struct {
	path  string
	lines []string
}

func (e *fileErrors) add(line int, caseName, format string, a ...any) {
	where := e.path
	if line > 0 {
		where += ":" + strconv.Itoa(line)
	}
	if caseName != "" {
		where += fmt.Sprintf(": case %q", caseName)
	}
	e.lines = append(e.lines, where+": "+fmt.Sprintf(format, a...))
}

// MalformedError is a test file with mistakes: one line each.
type MalformedError struct{ Lines []string }

func (e *MalformedError) Error() string { return strings.Join(e.Lines, "\n") }

// ParseFile checks a test file's text; a malformed one returns a
// *MalformedError with one `file:line: case "x": ...` line per mistake,
// and what could be read of it.
func ParseFile(path string, b []byte) (*File, error) { return parseFile(path, b, "") }

// parseFile is ParseFile refusing a playbook outside root (Under), when
// root is given, before looking for it.
func parseFile(path string, b []byte, root string) (*File, error) {
	errs := &fileErrors{path: path}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		errs.add(0, "", "%s", strings.TrimPrefix(err.Error(), "yaml: "))
		return nil, &MalformedError{errs.lines}
	}
	f := &File{Path: path}
	top := &doc
	if top.Kind == yaml.DocumentNode && len(top.Content) > 0 {
		top = top.Content[0]
	}
	p := &parser{errs: errs}
	pb := ""
	p.mapping(top, "", map[string]func(*yaml.Node){
		"playbook": func(n *yaml.Node) { pb = p.str(n, "") },
		"cases": func(n *yaml.Node) {
			if n.Kind != yaml.SequenceNode {
				p.errs.add(n.Line, "", "cases must be a list")
				return
			}
			seen := map[string]bool{}
			for _, c := range n.Content {
				tc := p.testCase(c)
				if tc == nil {
					continue
				}
				if seen[tc.Name] {
					p.errs.add(tc.Line, tc.Name, "a case of that name comes earlier in the file")
				}
				seen[tc.Name] = true
				f.Cases = append(f.Cases, tc)
			}
		},
	}, "cases")
	if pb == "" {
		pb = strings.TrimSuffix(filepath.Base(path), Suffix) + ".yaml"
	}
	f.Playbook = pb
	if !filepath.IsAbs(pb) {
		f.Playbook = filepath.Join(filepath.Dir(path), pb)
	}
	if err := readable(f.Playbook, root); err != nil {
		f.unreadable = true
		errs.add(top.Line, "", "playbook %s: %v", pb, err)
	}
	if len(errs.lines) > 0 {
		// The file is returned too, so that its cases can still be checked
		// against the playbook: every mistake is reported at once.
		return f, &MalformedError{errs.lines}
	}
	return f, nil
}

func unwrap(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

type parser struct {
	errs *fileErrors
	cas  string // the case being read
}

// mapping calls each key's reader, refusing unknown keys and reporting
// missing required ones; it says whether every key was known.
func (p *parser) mapping(n *yaml.Node, what string, keys map[string]func(*yaml.Node), required ...string) bool {
	if n.Kind != yaml.MappingNode {
		p.errs.add(n.Line, p.cas, "%s must be a mapping", orDefault(what, "a test file"))
		return false
	}
	seen := map[string]bool{}
	clean := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		read, ok := keys[k.Value]
		if !ok {
			p.errs.add(k.Line, p.cas, "unknown key %q%s (known: %s)", k.Value, in(what), strings.Join(sortedKeys(keys), ", "))
			clean = false
			continue
		}
		seen[k.Value] = true
		read(v)
	}
	for _, r := range required {
		if !seen[r] {
			p.errs.add(n.Line, p.cas, "%s needs %s", orDefault(what, "a test file"), r)
		}
	}
	return clean
}

func in(what string) string {
	if what == "" {
		return ""
	}
	return " in " + what
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (p *parser) str(n *yaml.Node, what string) string {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errs.add(n.Line, p.cas, "%s must be a string", orDefault(what, "the value"))
		return ""
	}
	return n.Value
}

func (p *parser) integer(n *yaml.Node, what string) *int {
	v, err := strconv.Atoi(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		p.errs.add(n.Line, p.cas, "%s must be a whole number, not %q", what, n.Value)
		return nil
	}
	return &v
}

func (p *parser) boolean(n *yaml.Node, what string) *bool {
	var v bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&v) != nil {
		p.errs.add(n.Line, p.cas, "%s must be true or false", what)
		return nil
	}
	return &v
}

func (p *parser) value(n *yaml.Node) any {
	var v any
	// A date is the text written, as a workload value set with --set
	// and a step's JSON result have it.
	submit.DatesAsText(n)
	if err := n.Decode(&v); err != nil {
		p.errs.add(n.Line, p.cas, "%v", err)
	}
	return normalize(v)
}

// normalize makes decoded YAML look like decoded JSON (string keys), as a
// real attempt's result does.
func normalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = normalize(e)
		}
	case []any:
		for i, e := range t {
			t[i] = normalize(e)
		}
	case int:
		return float64(t)
	}
	return v
}

func (p *parser) names(n *yaml.Node, what string) []string {
	if n.Kind == yaml.ScalarNode {
		return []string{p.str(n, what)}
	}
	if n.Kind != yaml.SequenceNode {
		p.errs.add(n.Line, p.cas, "%s must be a list of step names", what)
		return nil
	}
	var out []string
	for _, e := range n.Content {
		out = append(out, p.str(e, what))
	}
	return out
}

func (p *parser) testCase(n *yaml.Node) *Case {
	c := &Case{Line: n.Line, Real: map[string]bool{}, Mocks: map[string]*StepMock{}}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "name" {
				c.Name = n.Content[i+1].Value
			}
		}
	}
	p.cas = c.Name
	defer func() { p.cas = "" }()
	ok := p.mapping(n, "a case", map[string]func(*yaml.Node){
		"name": func(v *yaml.Node) { p.str(v, "name") },
		"set": func(v *yaml.Node) {
			m, _ := p.value(v).(map[string]any)
			if m == nil {
				p.errs.add(v.Line, p.cas, "set must be a mapping of workload keys to values")
			}
			c.Set = m
		},
		"input":   func(v *yaml.Node) { c.Input = p.str(v, "input") },
		"history": func(v *yaml.Node) { c.History = p.str(v, "history") },
		"logical_time": func(v *yaml.Node) {
			t, err := time.Parse(time.RFC3339, v.Value)
			if err != nil {
				p.errs.add(v.Line, p.cas, "logical_time must be an RFC 3339 time like 2026-01-02T03:00:00Z, not %q", v.Value)
				return
			}
			t = t.UTC()
			c.LogicalTime = &t
		},
		"real": func(v *yaml.Node) {
			for _, s := range p.names(v, "real") {
				c.Real[s] = true
			}
		},
		"mocks": func(v *yaml.Node) { c.Mocks = p.mocks(v) },
		"events": func(v *yaml.Node) {
			if v.Kind != yaml.SequenceNode {
				p.errs.add(v.Line, p.cas, "events must be a list")
				return
			}
			for _, e := range v.Content {
				if ev := p.event(e); ev != nil {
					c.Events = append(c.Events, ev)
				}
			}
		},
		"expect": func(v *yaml.Node) { c.Expect = p.expect(v) },
	}, "name", "expect")
	if !ok || c.Name == "" {
		return nil
	}
	return c
}

func (p *parser) mocks(n *yaml.Node) map[string]*StepMock {
	out := map[string]*StepMock{}
	if n.Kind != yaml.MappingNode {
		p.errs.add(n.Line, p.cas, "mocks must be a mapping of step names to mocks")
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if m := p.stepMock(n.Content[i+1], "mock of step "+strconv.Quote(n.Content[i].Value)); m != nil {
			out[n.Content[i].Value] = m
		}
	}
	return out
}

// stepMock reads a step's mock: an attempt's forms (result, error, lost),
// attempts, elements, or a sub-playbook's outcome or mocks.
func (p *parser) stepMock(n *yaml.Node, what string) *StepMock {
	m := &StepMock{Line: n.Line}
	if n.Kind == yaml.ScalarNode && n.Value == "lost" {
		m.Attempts = []*Attempt{{Lost: true}}
		return m
	}
	var one *Attempt
	keys := map[string]func(*yaml.Node){
		"attempts": func(v *yaml.Node) {
			if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
				p.errs.add(v.Line, p.cas, "attempts must be a list of attempts (result, error or lost), one per attempt")
				return
			}
			for _, a := range v.Content {
				if at := p.attempt(a); at != nil {
					m.Attempts = append(m.Attempts, at)
				}
			}
		},
		"elements": func(v *yaml.Node) {
			m.Elements = map[int]*StepMock{}
			if v.Kind != yaml.MappingNode {
				p.errs.add(v.Line, p.cas, "elements must be a mapping of element indexes (0, 1, ...) or templates over item ({{ item.region == 'eu' }}) to mocks")
				return
			}
			for i := 0; i+1 < len(v.Content); i += 2 {
				key := v.Content[i]
				if expr.IsTemplate(key.Value) {
					if e := p.stepMock(v.Content[i+1], "mock of elements "+key.Value); e != nil {
						m.When = append(m.When, &ElementWhen{Line: key.Line, Source: key.Value, Mock: e})
					}
					continue
				}
				idx, err := strconv.Atoi(key.Value)
				if err != nil || idx < 0 {
					p.errs.add(key.Line, p.cas, "elements: %q is neither an element index (0, 1, ...) nor a template over item ({{ item.region == 'eu' }})", key.Value)
					continue
				}
				if e := p.stepMock(v.Content[i+1], "mock of element "+key.Value); e != nil {
					m.Elements[idx] = e
				}
			}
		},
		"outcome": func(v *yaml.Node) {
			if m.Child == nil {
				m.Child = &ChildMock{}
			}
			m.Child.Status = p.str(v, "outcome")
			if m.Child.Status != contract.RunCompleted && m.Child.Status != contract.RunFailed {
				p.errs.add(v.Line, p.cas, "outcome must be completed or failed, not %q", m.Child.Status)
			}
		},
		"mocks": func(v *yaml.Node) { m.Mocks = p.mocks(v) },
	}
	attemptKeys := []string{"result", "error", "lost", "recovery_exit_code", "takes", "files"}
	for _, k := range attemptKeys {
		keys[k] = func(*yaml.Node) {}
	}
	if !p.mapping(n, "a "+what, keys) {
		return nil
	}
	if hasAny(n, attemptKeys...) {
		one = p.attempt(onlyKeys(n, attemptKeys...))
		if one != nil {
			m.Attempts = []*Attempt{one}
		}
		if hasAny(n, "attempts") {
			p.errs.add(n.Line, p.cas, "a %s gives attempts, or one attempt's result/error/lost for all of them, not both", what)
		}
	}
	if m.Child != nil {
		if len(m.Attempts) > 0 && m.Attempts[0].Result != nil {
			r, ok := m.Attempts[0].Result.(map[string]any)
			if !ok {
				p.errs.add(n.Line, p.cas, "a sub-playbook's result is its aggregate: a mapping")
			}
			m.Child.Result = r
		}
		m.Attempts = nil
	} else if hasAny(n, "result") && m.Mocks != nil {
		p.errs.add(n.Line, p.cas, "a %s gives mocks for the sub-playbook's steps, or its outcome and result, not both", what)
	}
	if len(m.Attempts) == 0 && m.Elements == nil && m.Child == nil && m.Mocks == nil {
		p.errs.add(n.Line, p.cas, "a %s needs result, error, lost, attempts, elements, outcome or mocks", what)
		return nil
	}
	return m
}

func hasAny(n *yaml.Node, keys ...string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		for _, k := range keys {
			if n.Content[i].Value == k {
				return true
			}
		}
	}
	return false
}

func onlyKeys(n *yaml.Node, keys ...string) *yaml.Node {
	out := &yaml.Node{Kind: yaml.MappingNode, Line: n.Line, Column: n.Column}
	for i := 0; i+1 < len(n.Content); i += 2 {
		for _, k := range keys {
			if n.Content[i].Value == k {
				out.Content = append(out.Content, n.Content[i], n.Content[i+1])
			}
		}
	}
	return out
}

// attempt reads one attempt: {result: V}, {error: {...}}, lost, or
// {lost: true}; recovery_exit_code is what a recovery script exits with.
func (p *parser) attempt(n *yaml.Node) *Attempt {
	if n.Kind == yaml.ScalarNode && n.Value == "lost" {
		return &Attempt{Lost: true}
	}
	a := &Attempt{}
	forms := 0
	ok := p.mapping(n, "an attempt", map[string]func(*yaml.Node){
		"result": func(v *yaml.Node) { a.Result = p.value(v); forms++ },
		"error":  func(v *yaml.Node) { a.Error = p.mockError(v); forms++ },
		"lost": func(v *yaml.Node) {
			if b := p.boolean(v, "lost"); b != nil {
				a.Lost = *b
			}
			forms++
		},
		"recovery_exit_code": func(v *yaml.Node) {
			if i := p.integer(v, "recovery_exit_code"); i != nil {
				a.Recovery = *i
			}
		},
		"files": func(v *yaml.Node) {
			if v.Kind != yaml.MappingNode {
				p.errs.add(v.Line, p.cas, "files maps each file's path to its content")
				return
			}
			a.Files = map[string]string{}
			for i := 0; i+1 < len(v.Content); i += 2 {
				path := v.Content[i].Value
				if err := spec.CheckFilePath(path); err != nil {
					p.errs.add(v.Content[i].Line, p.cas, "files: %v", err)
					continue
				}
				a.Files[path] = p.str(v.Content[i+1], "files."+path)
			}
		},
		"takes": func(v *yaml.Node) {
			d, err := time.ParseDuration(v.Value)
			if err != nil || d < 0 {
				p.errs.add(v.Line, p.cas, "takes must be a duration like 90s or 1h, not %q", v.Value)
				return
			}
			a.Takes = d
		},
	})
	if !ok {
		return nil
	}
	if forms != 1 {
		p.errs.add(n.Line, p.cas, "an attempt gives exactly one of result, error or lost")
		return nil
	}
	if a.Files != nil && (a.Error != nil || a.Lost) {
		p.errs.add(n.Line, p.cas, "files are handed on by an attempt that succeeds: give them with a result")
		return nil
	}
	return a
}

func (p *parser) mockError(n *yaml.Node) *MockError {
	e := &MockError{}
	p.mapping(n, "an error", map[string]func(*yaml.Node){
		"type":        func(v *yaml.Node) { e.Type = p.str(v, "type") },
		"message":     func(v *yaml.Node) { e.Message = p.str(v, "message") },
		"exit_code":   func(v *yaml.Node) { e.ExitCode = p.integer(v, "exit_code") },
		"status_code": func(v *yaml.Node) { e.StatusCode = p.integer(v, "status_code") },
		"stdout":      func(v *yaml.Node) { e.Stdout = p.str(v, "stdout") },
		"stderr":      func(v *yaml.Node) { e.Stderr = p.str(v, "stderr") },
	})
	return e
}

var eventKinds = []string{"approve", "reject", "classify", "cancel", "drain", "deadline", "send"}

func (p *parser) event(n *yaml.Node) *Event {
	e := &Event{Line: n.Line}
	keys := map[string]func(*yaml.Node){
		"as":     func(v *yaml.Node) { e.As = p.str(v, "as") },
		"inputs": func(v *yaml.Node) { e.Inputs, _ = p.value(v).(map[string]any) },
		"by":     func(v *yaml.Node) { e.By = p.str(v, "by") },
		"reason": func(v *yaml.Node) { e.Reason = p.str(v, "reason") },
		"result": func(v *yaml.Node) { e.Result = p.value(v) },
		"data":   func(v *yaml.Node) { e.Data = p.value(v) },
		"after": func(v *yaml.Node) {
			d, err := time.ParseDuration(v.Value)
			if err != nil || d < 0 {
				p.errs.add(v.Line, p.cas, "after must be a duration like 90s or 1h, not %q", v.Value)
				return
			}
			e.After = &d
		},
		"on_start": func(v *yaml.Node) { e.OnStart = p.str(v, "on_start") },
	}
	for _, k := range eventKinds {
		keys[k] = func(v *yaml.Node) {
			if e.Kind != "" {
				p.errs.add(v.Line, p.cas, "an event is one of %s: this one is both %s and %s", strings.Join(eventKinds, ", "), e.Kind, k)
				return
			}
			e.Kind = k
			if v.Tag != "!!null" && v.Value != "" {
				e.Step = v.Value
			}
		}
	}
	if !p.mapping(n, "an event", keys) {
		return nil
	}
	switch {
	case e.Kind == "":
		p.errs.add(n.Line, p.cas, "an event needs one of %s", strings.Join(eventKinds, ", "))
		return nil
	case e.Kind == "send" && e.Step == "":
		p.errs.add(n.Line, p.cas, "send names the event it sends: send: EVENT")
	case (e.Kind == "approve" || e.Kind == "reject" || e.Kind == "classify") && e.Step == "":
		p.errs.add(n.Line, p.cas, "%s names the step it decides: %s: STEP", e.Kind, e.Kind)
	case e.Kind == "classify" && e.As != "retry" && e.As != "fail" && e.As != "skip":
		p.errs.add(n.Line, p.cas, "classify needs as: retry, fail or skip")
	case e.Kind == "cancel" || e.Kind == "drain":
		e.Reason = orDefault(e.Step, e.Reason)
		e.Step = ""
	case e.Kind == "deadline":
		if e.Step != "" && e.Step != "true" {
			p.errs.add(n.Line, p.cas, "deadline is true (the run's deadline passes), not %q", e.Step)
		}
		e.Step = ""
		if e.After == nil || e.OnStart != "" {
			p.errs.add(n.Line, p.cas, "deadline needs after: D, when the run's deadline passes from its start (and no on_start)")
			e.After = nil
		}
	}
	return e
}

func (p *parser) expect(n *yaml.Node) Expect {
	var x Expect
	p.mapping(n, "expect", map[string]func(*yaml.Node){
		"status": func(v *yaml.Node) {
			x.Status = p.str(v, "status")
			if !runStatuses.MatchString(x.Status) {
				p.errs.add(v.Line, p.cas, "status %q is not a run status (completed, completed_with_warnings, failed, cancelled)", x.Status)
			}
		},
		"steps": func(v *yaml.Node) {
			x.Steps = map[string]*StepExpect{}
			if v.Kind != yaml.MappingNode {
				p.errs.add(v.Line, p.cas, "expect.steps must be a mapping of step names to what they show")
				return
			}
			for i := 0; i+1 < len(v.Content); i += 2 {
				x.Steps[v.Content[i].Value] = p.stepExpect(v.Content[i+1])
			}
		},
		"started": func(v *yaml.Node) { x.Order = p.names(v, "started") },
		"assert": func(v *yaml.Node) {
			items := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				items = v.Content
			}
			for _, a := range items {
				if a.Kind != yaml.ScalarNode {
					p.errs.add(a.Line, p.cas, "an assertion must be a string: quote it when it holds \": \" or starts with { or [")
					continue
				}
				src := a.Value
				e, err := expr.CompileExprAt(src, a.Line, expr.ScopeEnd, true, aggregateNames...)
				if err != nil {
					p.errs.add(a.Line, p.cas, "assert %v", err)
					continue
				}
				x.Asserts = append(x.Asserts, &Assert{Source: src, Line: a.Line, expr: e})
			}
		},
	})
	return x
}

var runStatuses = regexp.MustCompile(`^(completed|completed_with_warnings|failed|cancelled)$`)

var stepStatuses = regexp.MustCompile(`^(completed|failed|skipped|cancelled|pending_failed|pending|running|reused)$`)

// aggregateNames are the aggregate's top-level names an assertion reads
// besides those of end's scope.
var aggregateNames = []string{"status", "workflow_id", "run_id", "evaluated_by_end_step", "cancel_reason", "timeout", "notifications", "logical_time", "origin"}

func (p *parser) stepExpect(n *yaml.Node) *StepExpect {
	x := &StepExpect{Line: n.Line}
	if n.Kind == yaml.ScalarNode {
		x.Status = n.Value
	} else {
		strPtr := func(v *yaml.Node, what string) *string { s := p.str(v, what); return &s }
		p.mapping(n, "a step's expectation", map[string]func(*yaml.Node){
			"status":        func(v *yaml.Node) { x.Status = p.str(v, "status") },
			"attempts":      func(v *yaml.Node) { x.Attempts = p.integer(v, "attempts") },
			"routed_to_end": func(v *yaml.Node) { x.RoutedToEnd = p.boolean(v, "routed_to_end") },
			"skip_reason":   func(v *yaml.Node) { x.SkipReason = strPtr(v, "skip_reason") },
			"error_type":    func(v *yaml.Node) { x.ErrorType = strPtr(v, "error_type") },
			"error_message": func(v *yaml.Node) { x.ErrorMessage = strPtr(v, "error_message") },
			"recovery":      func(v *yaml.Node) { x.Recovery = strPtr(v, "recovery") },
		})
	}
	if x.Status != "" && !stepStatuses.MatchString(x.Status) {
		p.errs.add(n.Line, p.cas, "%q is not a step status (completed, failed, skipped, cancelled, pending_failed)", x.Status)
	}
	return x
}
