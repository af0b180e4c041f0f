package submit

import (
	"fmt"
	"maps"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"

	exprlang "github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"
)

// ParseStrict parses a playbook being submitted (validate, run, retry) and
// adds the checks Parse does not make, so that a frozen playbook accepted
// before they existed still replays: every expression and template is
// type-checked against what it may read (the workload's declared keys, the
// steps upstream of it, each step's fields and its tool's result shape),
// a `workflow` must have steps, and, when dir (the playbook's directory) is
// given, every recovery_script that names a file must exist. Errors are
// every problem of the file, in file order.
func ParseStrict(file string, src []byte, dir string) (*spec.Playbook, error) {
	pb, err := parseStrict(file, src, dir)
	if err != nil {
		return nil, err
	}
	return pb, nil
}

// parseStrict is ParseStrict, and the playbook as far as it decoded even
// when it has errors (nil when it did not decode), so that LoadBundle can
// go on to the sub-playbooks it names.
func parseStrict(file string, src []byte, dir string) (*spec.Playbook, error) {
	pb, err := spec.Decode(file, src)
	if pb == nil {
		return nil, err
	}
	errs := spec.Errors{}.Add(file, err)
	refused, warned := check(pb, dir)
	errs = append(errs, pb.WithoutBroken(refused)...)
	for _, w := range pb.WithoutBroken(warned) {
		pb.Warnings = append(pb.Warnings, w.Error())
	}
	for _, e := range pb.SubmitErrors() {
		errs = errs.Add(file, e)
	}
	return pb, errs.Err()
}

// check makes ParseStrict's own checks: what refuses the playbook, and
// what is only pointed out (warnings).
func check(pb *spec.Playbook, dir string) (errs, warnings spec.Errors) {
	if len(pb.Steps) == 1 && pb.Steps[0].Injected {
		errs = append(errs, &spec.Error{File: pb.File, Line: pb.KeyLine("workflow"), Msg: "workflow has no steps: a run would do nothing"})
	}
	errs = errs.Add(pb.File, CheckSchedule(pb))
	if len(pb.Name) > spec.MaxSubmittedName {
		errs = append(errs, &spec.Error{File: pb.File, Line: pb.KeyLine("name"), Msg: fmt.Sprintf("metadata.name is %d bytes long: at most %d (a run's ID, the name and a suffix, names its log directory)", len(pb.Name), spec.MaxSubmittedName)})
	}
	c := &checker{pb: pb, workload: workloadType(pb.Workload)}
	// Every expression is listed before any is checked, so that which steps
	// are upstream of which is worked out once, for the whole graph.
	exprs := make([][]*exprCheck, len(pb.Steps))
	for i, s := range pb.Steps {
		exprs[i] = c.step(i, s)
	}
	c.findUpstream(exprs)
	for i, s := range pb.Steps {
		if len(s.Name) > spec.MaxSubmittedName {
			errs = append(errs, &spec.Error{File: pb.File, Line: s.Line, Step: string([]rune(s.Name)[:20]) + "...", Msg: fmt.Sprintf("the step's name is %d bytes long: at most %d (it names the step's log directory, with a loop element's [index])", len(s.Name), spec.MaxSubmittedName)})
		}
		for _, x := range exprs[i] {
			if refused := c.expr(x); len(refused) > 0 {
				errs = append(errs, refused...)
			} else if w := c.warn(x); w != nil {
				warnings = append(warnings, w)
			}
		}
		if e := checkRaisedType(pb, s); e != nil {
			errs = append(errs, e)
		}
		errs = append(errs, c.checkInputsFrom(s)...)
	}
	for _, event := range []string{"on_failure", "on_success", "on_waiting"} {
		src := map[string]string{"on_failure": pb.Notify.OnFailure, "on_success": pb.Notify.OnSuccess, "on_waiting": pb.Notify.OnWaiting}[event]
		if expr.IsTemplate(src) {
			for _, x := range c.template(-1, nil, pb.KeyLine("notify."+event), "notify."+event+".webhook", src, expr.ScopeEnd, readsEvery, nil) {
				errs = append(errs, c.expr(x)...)
			}
		}
	}
	for _, t := range pb.Triggers {
		if t.After != nil && t.After.Playbook == pb.Name {
			errs = append(errs, &spec.Error{File: pb.File, Line: t.Line, Msg: fmt.Sprintf("triggers: after.playbook %q is this playbook: each run that ends %s would start the next, with nothing to bound them (a step's retry: retries it; schedule: runs it every so often)", t.After.Playbook, strings.Join(t.After.Status, " or "))})
		}
	}
	if k := pb.Concurrency; k != nil && expr.IsTemplate(k.Key) {
		// Rendered before any step runs: its types are checked as a
		// step's templates are, so that it fails no run that started.
		for _, x := range c.template(-1, nil, k.KeyLine, "concurrency.key", k.Key, expr.ScopeStep, readsEvery, nil) {
			errs = append(errs, c.expr(x)...)
		}
	}
	if dir != "" {
		errs = append(errs, checkRecoveryScripts(pb, dir)...)
	}
	return errs, warnings
}

type checker struct {
	pb       *spec.Playbook
	workload types.Map
	// upstream holds, for each step (by position), the steps its
	// expressions read that are upstream of it (findUpstream).
	upstream []map[string]bool
}

// reach is which steps an expression may read.
type reach int

const (
	// readsUpstream: the steps upstream of its own (templates, loop.in).
	readsUpstream reach = iota
	// readsItself: those and its step itself (next, retry_when, stop_when).
	readsItself
	// readsEvery: every step (end's expressions, notify).
	readsEvery
)

// exprCheck is one expression to check, parsed once: where it is, what it
// may read, and what it reads.
type exprCheck struct {
	s      *spec.Step // nil outside any step (notify)
	pos    int        // s's position in pb.Steps
	line   int
	what   string
	src    string
	scope  expr.Scope
	reads  reach
	extra  []string
	asBool bool
	// asList: the expression gives a loop's elements.
	asList bool
	// parsed is false when the text does not parse: validate reported it.
	parsed bool
	root   ast.Node
	refs   refCollector
}

// step lists every expression and template of a step, to check.
func (c *checker) step(pos int, s *spec.Step) []*exprCheck {
	upstream, itself := readsUpstream, readsItself
	if s.Name == spec.EndStep {
		upstream, itself = readsEvery, readsEvery
	}
	var xs []*exprCheck
	add := func(line int, what, src string, scope expr.Scope, reads reach, asBool bool) {
		xs = append(xs, newExprCheck(pos, s, line, what, src, scope, reads, nil, asBool))
	}
	for _, r := range s.Next {
		if r.When != nil {
			add(r.When.Line, "when", r.When.Source, expr.ScopeStep, itself, true)
		}
	}
	if s.Retry != nil {
		for _, e := range []struct {
			what string
			e    *expr.Expr
		}{{"retry.retry_when", s.Retry.RetryWhen}, {"retry.stop_when", s.Retry.StopWhen}} {
			if e.e != nil {
				add(e.e.Line, e.what, e.e.Source, expr.ScopeRetry, itself, true)
			}
		}
	}
	if s.SuccessWhen != nil {
		add(s.SuccessWhen.Line, "success_when", s.SuccessWhen.Source, expr.ScopeEnd, upstream, true)
	}
	if s.Loop != nil && s.Loop.In != nil {
		x := newExprCheck(pos, s, s.Loop.In.Line, "loop.in", s.Loop.In.Source, expr.ScopeStep, upstream, nil, false)
		x.asList = true
		xs = append(xs, x)
	}
	if s.Tool != nil {
		scope, extra := spec.ToolScope(s)
		_ = expr.TemplatesIn(s.Tool.Spec, func(src string) error {
			xs = append(xs, c.template(pos, s, s.Tool.Line, "tool", src, scope, upstream, extra)...)
			return nil
		})
		_ = expr.TemplatesIn(s.Files.Spec(), func(src string) error {
			xs = append(xs, c.template(pos, s, s.Tool.Line, "inputs", src, scope, upstream, extra)...)
			return nil
		})
	}
	return xs
}

// template lists the expressions of a template; one whose text does not
// compile at all was reported by validate already.
func (c *checker) template(pos int, s *spec.Step, line int, what, src string, scope expr.Scope, reads reach, extra []string) []*exprCheck {
	t, err := expr.CompileTemplate(src, scope, extra...)
	if err != nil {
		return nil
	}
	var xs []*exprCheck
	for _, e := range t.Exprs() {
		xs = append(xs, newExprCheck(pos, s, line, what, e.Source, scope, reads, extra, false))
	}
	return xs
}

func newExprCheck(pos int, s *spec.Step, line int, what, src string, scope expr.Scope, reads reach, extra []string, asBool bool) *exprCheck {
	x := &exprCheck{s: s, pos: pos, line: line, what: what, src: src, scope: scope, reads: reads, extra: extra, asBool: asBool}
	if tree, err := parser.Parse(src); err == nil {
		x.parsed, x.root = true, tree.Node
		ast.Walk(&tree.Node, &x.refs)
	}
	return x
}

// anyBroken tells whether a step's keys did not all decode
// (spec.Playbook.Broken): its arcs may be missing, and which step is
// upstream of which is not known.
func (c *checker) anyBroken() bool {
	return slices.ContainsFunc(c.pb.Steps, func(s *spec.Step) bool { return c.pb.Broken(s.Name) })
}

// expr checks one expression: the steps it reads are upstream, the
// workload keys it reads are declared, and it type-checks.
func (c *checker) expr(x *exprCheck) spec.Errors {
	at := func(format string, args ...any) *spec.Error {
		e := &spec.Error{File: c.pb.File, Line: x.line, Msg: fmt.Sprintf("%s: %q: ", x.what, x.src) + fmt.Sprintf(format, args...)}
		if x.s != nil {
			e.Step = x.s.Name
		}
		return e
	}
	if !x.parsed {
		return nil // validate reported it
	}
	var errs spec.Errors
	unknown := false
	for _, name := range x.refs.steps {
		if c.pb.Step(name) == nil {
			unknown = true // validate reported it; its type would be told again
			continue
		}
		if c.canRead(x, name) {
			continue
		}
		if x.s != nil && name == x.s.Name {
			errs = append(errs, at("reads steps.%s, the step itself, which has not run yet (its own next, retry_when and stop_when may read it)", name))
			continue
		}
		if c.anyBroken() {
			continue // a step whose keys did not decode may have lost the arc: its own error says so
		}
		reader := "it"
		if x.s != nil {
			reader = fmt.Sprintf("%q", x.s.Name)
		}
		errs = append(errs, at("reads steps.%s, but step %q is not upstream of %s (it would read null): make it a predecessor through next or depends_on", name, name, reader))
	}
	if x.refs.hostZone {
		// Workers in different zones would decide differently, and a
		// replay on another worker would not match the run.
		errs = append(errs, at(".Local() or the zone \"Local\" reads the time zone of the worker that evaluates it: use .UTC(), or .In(timezone(\"Europe/Paris\")) for a named zone"))
	}
	for _, key := range x.refs.workload {
		if _, ok := c.workload[key]; !ok && !c.pb.WorkloadBroken() {
			errs = append(errs, at("reads workload.%s, which the workload section does not declare (%s)", key, c.declared()))
		}
	}
	if len(errs) > 0 || unknown {
		return errs
	}
	opts := []exprlang.Option{exprlang.Env(c.env(x)), exprlang.DisableBuiltin("now")}
	if x.asBool {
		opts = append(opts, exprlang.AsBool())
	}
	program, err := exprlang.Compile(x.src, opts...)
	if err != nil {
		hint := c.jsonHint(x, err)
		if len(c.pb.Triggers) == 0 && strings.Contains(err.Error(), "unknown name trigger") {
			hint = ": trigger is what started the run, read by a playbook with triggers: (a run started by hand or a schedule has nothing to read there)"
		}
		return spec.Errors{at("%s%s", expr.FirstLine(err.Error()), hint)}
	}
	if bad := constantTimeCalls(program.Node(), x.scope); len(bad) > 0 {
		return spec.Errors{at("%s", bad)}
	}
	if t := program.Node().Type(); t != nil && t.Kind() == reflect.Map && t.Key().Kind() != reflect.String {
		// groupBy, fromPairs: a mapping whose keys are any value, which no
		// step's input or result can hold, and which text shows as Go's.
		return spec.Errors{at("gives a mapping whose keys may be any value, which no step's input or result can hold: read one entry (groupBy(...)['csv']), or turn it into a list (toPairs(...))")}
	}
	if x.asList {
		return c.loopList(x, program, at)
	}
	return nil
}

// jsonHint suggests, for a field the checker does not know in a step's
// result (`steps.x.result.rows`), the field of its JSON, when the step's
// kind parses its output into result.json: `steps.x.result.json.rows`.
func (c *checker) jsonHint(x *exprCheck, err error) string {
	var hint string
	ast.Find(x.root, func(n ast.Node) bool {
		field, ok := n.(*ast.MemberNode)
		if !ok {
			return false
		}
		name, prop := stepResult(field.Node)
		key, ok := field.Property.(*ast.StringNode)
		if name == "" || prop != "result" || !ok || !strings.Contains(err.Error(), "unknown field "+key.Value) {
			return false
		}
		s := c.pb.Step(name)
		if s == nil || s.Tool == nil || s.Loop != nil {
			return false
		}
		shape := spec.ResultShape(s.Tool.Kind)
		if _, hasJSON := shape["json"]; !hasJSON {
			return false
		}
		fields := slices.Sorted(maps.Keys(shape))
		article := "a"
		if s.Tool.Kind == "http" {
			article = "an"
		}
		hint = fmt.Sprintf(": %s %s step's result is {%s}; write steps.%s.result.json.%s for a field of the JSON it gave", article, s.Tool.Kind, strings.Join(fields, ", "), name, key.Value)
		return true
	})
	return hint
}

// stepResult reads steps.NAME.PROP: NAME and PROP, or "" when n is not.
func stepResult(n ast.Node) (name, prop string) {
	outer, ok := n.(*ast.MemberNode)
	if !ok {
		return "", ""
	}
	inner, ok := outer.Node.(*ast.MemberNode)
	if !ok {
		return "", ""
	}
	id, ok := inner.Node.(*ast.IdentifierNode)
	stepName, okName := inner.Property.(*ast.StringNode)
	field, okField := outer.Property.(*ast.StringNode)
	if !ok || id.Value != "steps" || !okName || !okField {
		return "", ""
	}
	return stepName.Value, field.Value
}

// warn points out what an expression means that its author may not have
// meant, without refusing it: an http step's retry_when or stop_when that
// orders status_code without testing it against nil. Such an ordering
// with null is false, so `status_code >= 500 and status_code < 600`
// retries 5xx answers, as it says, and not a request that got no answer.
func (c *checker) warn(x *exprCheck) *spec.Error {
	if x.scope != expr.ScopeRetry || x.s == nil || x.s.Tool == nil || x.s.Tool.Kind != "http" {
		return nil
	}
	fix := unguardedStatus(x.src)
	if fix == "" {
		return nil
	}
	what := "retried"
	if x.what == "retry.stop_when" {
		what = "stopped"
	}
	return &spec.Error{File: c.pb.File, Line: x.line, Step: x.s.Name, Msg: fmt.Sprintf("warning: %s: %q: status_code is null when the request got no answer (connection refused, a timeout), so such an attempt is not %s; write %q to include it",
		x.what, x.src, what, "status_code == nil or "+fix)}
}

// loopList checks that a loop's expression gives a list: its type, when
// the checker knows it, is one; and when it reads nothing (a constant such
// as "1..200000") the list it gives is within the bound on a loop's length.
func (c *checker) loopList(x *exprCheck, program *vm.Program, at func(string, ...any) *spec.Error) spec.Errors {
	switch t := program.Node().Type(); {
	case t == nil || t.Kind() == reflect.Interface || t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
	default:
		return spec.Errors{at("gives %s, not a list: a loop runs over a list (a YAML list, an expression giving one, or a range such as 1..10)", typeName(t))}
	}
	// A range of two numbers: its length is known without making it.
	if r, ok := x.root.(*ast.BinaryNode); ok && r.Operator == ".." {
		from, okFrom := r.Left.(*ast.IntegerNode)
		to, okTo := r.Right.(*ast.IntegerNode)
		if okFrom && okTo && to.Value >= from.Value {
			if span := to.Value - from.Value; span < 0 || span >= spec.MaxLoopItems {
				// span < 0: the subtraction overflowed, far over the bound.
				return spec.Errors{at("loop gives %s elements, over the limit of %d elements per loop", rangeLength(from.Value, to.Value), spec.MaxLoopItems)}
			}
		}
	}
	return nil
}

// rangeLength is how many numbers from..to holds, exactly, even past int.
func rangeLength(from, to int) string {
	n := new(big.Int).Sub(big.NewInt(int64(to)), big.NewInt(int64(from)))
	return n.Add(n, big.NewInt(1)).String()
}

// typeName is a Go type as a playbook's author knows it.
func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a number (int)"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return t.String()
}

// canRead tells whether an expression may read a step.
func (c *checker) canRead(x *exprCheck, name string) bool {
	switch {
	case x.reads == readsEvery:
		return true
	case x.reads == readsItself && name == x.s.Name:
		return true
	}
	return c.upstream[x.pos][name]
}

func (c *checker) declared() string {
	keys := make([]string, 0, len(c.workload))
	for k := range c.workload {
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return "it declares no keys"
	}
	sort.Strings(keys)
	return "declared: " + strings.Join(keys, ", ")
}

// refCollector records NAME in every steps.NAME and KEY in every
// workload.KEY (or steps["NAME"], workload["KEY"]). It counts the
// identifiers `steps` too, and how many of them are read as steps.NAME,
// and notes `$env`, which reaches `steps` by another name.
type refCollector struct {
	steps, workload     []string
	stepsIdents, byName int
	dollarEnv           bool
	// hostZone: it calls a time's .Local(), or names the zone "Local" to
	// date or timezone, which reads the time zone of whichever host
	// evaluates it.
	hostZone bool
}

func (r *refCollector) Visit(node *ast.Node) {
	// date(..., 'Local') and timezone('Local') read the host's zone too.
	var fn string
	var args []ast.Node
	switch c := (*node).(type) {
	case *ast.BuiltinNode:
		fn, args = c.Name, c.Arguments
	case *ast.CallNode:
		if id, ok := c.Callee.(*ast.IdentifierNode); ok {
			fn, args = id.Value, c.Arguments
		}
	}
	if fn == "date" || fn == "timezone" {
		for _, a := range args {
			if s, ok := a.(*ast.StringNode); ok && strings.EqualFold(s.Value, "Local") {
				r.hostZone = true
			}
		}
	}
	if m, ok := (*node).(*ast.MemberNode); ok && m.Method {
		if prop, ok := m.Property.(*ast.StringNode); ok && prop.Value == "Local" {
			r.hostZone = true
		}
	}
	if id, ok := (*node).(*ast.IdentifierNode); ok {
		switch id.Value {
		case "steps":
			r.stepsIdents++
		case "$env":
			r.dollarEnv = true
		}
		return
	}
	m, ok := (*node).(*ast.MemberNode)
	if !ok {
		return
	}
	id, ok := m.Node.(*ast.IdentifierNode)
	if !ok {
		return
	}
	prop, ok := m.Property.(*ast.StringNode)
	if !ok {
		return
	}
	switch id.Value {
	case "steps":
		r.steps = append(r.steps, prop.Value)
		r.byName++
	case "workload":
		r.workload = append(r.workload, prop.Value)
	}
}

// readsStepsByName tells whether the expression uses `steps` only as
// steps.NAME: then the type checker looks up no step but those NAMEs.
func (r *refCollector) readsStepsByName() bool {
	return !r.dollarEnv && r.stepsIdents == r.byName
}

// findUpstream works out, for every step, which of the steps its
// expressions read are upstream of it (c.upstream), in one pass over the
// graph: its strongly connected components in topological order (a
// cycle, an error already, makes its steps upstream of one another), each
// taking from its predecessors the set of read steps upstream of it, as a
// bitset. A component's set is dropped once every component after it has
// taken it, so a long chain holds two at a time.
func (c *checker) findUpstream(exprs [][]*exprCheck) {
	steps := c.pb.Steps
	c.upstream = make([]map[string]bool, len(steps))
	pos := make(map[string]int, len(steps))
	for i, s := range steps {
		pos[s.Name] = i
	}
	// The questions: which steps each step reads, numbered as bits.
	asked := make([][]int, len(steps))
	bitOf := make([]int, len(steps))
	bits := 0
	for i, xs := range exprs {
		for _, x := range xs {
			if x.reads == readsEvery {
				continue
			}
			for _, name := range x.refs.steps {
				j, ok := pos[name]
				if !ok || j == i {
					continue
				}
				asked[i] = append(asked[i], j)
				if bitOf[j] == 0 {
					bits++
					bitOf[j] = bits // bit bitOf[j]-1
				}
			}
		}
	}
	if bits == 0 {
		return
	}
	preds := make([][]int, len(steps))
	for i, s := range steps {
		for _, a := range c.pb.Incoming(s.Name) {
			preds[i] = append(preds[i], pos[a.From])
		}
	}
	comp, count := components(preds)
	members := make([][]int, count)
	// takers counts the arcs out of each component that other components take.
	takers := make([]int, count)
	for v := range steps {
		members[comp[v]] = append(members[comp[v]], v)
		for _, p := range preds[v] {
			if comp[p] != comp[v] {
				takers[comp[p]]++
			}
		}
	}
	words := (bits + 63) / 64
	sets := make([][]uint64, count)
	var free [][]uint64
	for k := range count {
		var set []uint64
		if n := len(free); n > 0 {
			set, free = free[n-1], free[:n-1]
			clear(set)
		} else {
			set = make([]uint64, words)
		}
		for _, v := range members[k] {
			for _, p := range preds[v] {
				pk := comp[p]
				if pk == k {
					continue
				}
				for w, bw := range sets[pk] {
					set[w] |= bw
				}
				if takers[pk]--; takers[pk] == 0 {
					free, sets[pk] = append(free, sets[pk]), nil
				}
			}
		}
		for _, v := range members[k] {
			for _, t := range asked[v] {
				b := bitOf[t] - 1
				if set[b/64]&(1<<(b%64)) != 0 || comp[t] == k {
					if c.upstream[v] == nil {
						c.upstream[v] = map[string]bool{}
					}
					c.upstream[v][steps[t].Name] = true
				}
			}
		}
		for _, v := range members[k] {
			if b := bitOf[v] - 1; b >= 0 {
				set[b/64] |= 1 << (b % 64)
			}
		}
		if takers[k] > 0 {
			sets[k] = set
		} else {
			free = append(free, set)
		}
	}
}

// components numbers the strongly connected components of a graph given
// by each node's predecessors, ancestors first: Tarjan's algorithm, which
// closes a component once every component it reaches is closed, run on
// the arcs reversed. It keeps its own stack, so that a chain of any
// length does not recurse.
func components(preds [][]int) (comp []int, count int) {
	n := len(preds)
	index := make([]int, n) // 0: not visited yet; else the visit's number
	low := make([]int, n)
	onStack := make([]bool, n)
	comp = make([]int, n)
	var stack []int
	type frame struct{ v, next int }
	var calls []frame
	visited := 0
	visit := func(v int) {
		visited++
		index[v], low[v] = visited, visited
		stack = append(stack, v)
		onStack[v] = true
		calls = append(calls, frame{v: v})
	}
	for root := range n {
		if index[root] != 0 {
			continue
		}
		visit(root)
		for len(calls) > 0 {
			f := &calls[len(calls)-1]
			v := f.v
			if f.next < len(preds[v]) {
				w := preds[v][f.next]
				f.next++
				switch {
				case index[w] == 0:
					visit(w)
				case onStack[w]:
					low[v] = min(low[v], index[w])
				}
				continue
			}
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				u := calls[len(calls)-1].v
				low[u] = min(low[u], low[v])
			}
			if low[v] != index[v] {
				continue
			}
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp[w] = count
				if w == v {
					break
				}
			}
			count++
		}
	}
	return comp, count
}

// upstreamOf is the set of a step's ancestors: every step with a path to it.
func (c *checker) upstreamOf(s *spec.Step) map[string]bool {
	seen := map[string]bool{}
	queue := []string{s.Name}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, a := range c.pb.Incoming(n) {
			if !seen[a.From] && a.From != s.Name {
				seen[a.From] = true
				queue = append(queue, a.From)
			}
		}
	}
	return seen
}

// readableSteps lists the steps an expression's environment gives the
// shapes of. One that reads steps only as steps.NAME needs only those
// NAMEs, each already found readable: the type checker looks up no other.
// One that hands `steps` on (let, `in`, $env) gets every step it may
// read, which costs a walk of the graph.
func (c *checker) readableSteps(x *exprCheck) []string {
	var out []string
	switch {
	case x.refs.readsStepsByName():
		for _, name := range x.refs.steps {
			if c.pb.Step(name) != nil {
				out = append(out, name)
			}
		}
	case x.reads == readsEvery:
		for _, s := range c.pb.Steps {
			out = append(out, s.Name)
		}
	default:
		for name := range c.upstreamOf(x.s) {
			out = append(out, name)
		}
		if x.reads == readsItself {
			out = append(out, x.s.Name)
		}
	}
	return out
}

// env is the typed environment of an expression: the names of its scope,
// with the workload's declared keys and the readable steps' shapes.
func (c *checker) env(x *exprCheck) types.Map {
	steps := types.Map{}
	for _, name := range c.readableSteps(x) {
		result := resultType(c.pb.Step(name), true)
		if c.pb.Broken(name) {
			// Its keys' errors are told; its result's shape is not known
			// (a loop whose block did not decode still gives a list).
			result = types.Any
		}
		steps[name] = types.Map{
			"status":   types.String,
			"result":   result,
			"error":    types.Map{"type": types.String, "message": types.String, "details": types.Any},
			"attempts": types.Int,
			// Each stored file the step produced, by its path.
			"files": types.Any,
		}
	}
	env := expr.ScopeNames(x.scope)
	env["workload"] = c.workload
	if c.pb.WorkloadBroken() {
		env["workload"] = types.Any // its keys are unknown: its errors are told
	}
	env["steps"] = steps
	env["playbook"] = types.Map{"name": types.String, "description": types.String}
	env["run"] = types.Map{"logical_time": types.String, "timed_out": types.Bool}
	delete(env, "trigger")
	if len(c.pb.Triggers) > 0 {
		env["trigger"] = TriggerType
	}
	if x.scope == expr.ScopeRetry {
		// One attempt's outcome: for a loop, one element's.
		env["result"] = resultType(x.s, false)
		env["error"] = types.Map{"type": types.String, "message": types.String}
		if x.s.Tool != nil && spec.RunsProcess(x.s.Tool.Kind) {
			// A process's attempt has an exit code: a number.
			env["exit_code"] = types.Int
		}
	}
	if len(x.extra) == 2 {
		env[x.extra[0]] = types.Any
		env[x.extra[1]] = types.Map{"index": types.Int, "length": types.Int}
	}
	return env
}

// resultType is a step's result type; a loop's is the list of its
// elements' results when whole is set.
func resultType(s *spec.Step, whole bool) types.Type {
	var t types.Type = types.Any
	if s.Tool != nil {
		if shape := spec.ResultShape(s.Tool.Kind); shape != nil {
			t = shape
		}
		if s.Tool.Kind == "approval" {
			// An approval's result holds every input it declares, of its
			// default's type, and no other.
			inputs, _ := s.Tool.Spec["inputs"].(map[string]any)
			declared := types.Map{}
			for name, v := range inputs {
				declared[name] = declaredType(v)
			}
			shape := maps.Clone(t.(types.Map))
			shape["inputs"] = declared
			t = shape
		}
	}
	if whole && s.Loop != nil {
		return types.Array(t)
	}
	return t
}

// declaredType is the type a workload default declares: its own, except
// that null, [] and {} declare nothing, and a mapping also accepts keys it
// does not list (nested keys merge freely).
func declaredType(v any) types.Type {
	switch t := v.(type) {
	case nil:
		return types.Any
	case bool:
		return types.Bool
	case int:
		return types.Int
	case float64:
		return types.Float64
	case string:
		return types.String
	case []any:
		if len(t) == 0 {
			return types.Any
		}
		return types.Array(types.Any)
	case map[string]any:
		if len(t) == 0 {
			return types.Any
		}
		m := workloadType(t)
		m[types.Extra] = types.Any
		return m
	}
	return types.Any
}

// workloadType is the type of the whole workload: exactly its declared keys.
func workloadType(w map[string]any) types.Map {
	m := types.Map{}
	for k, v := range w {
		m[k] = declaredType(v)
	}
	return m
}

// checkRecoveryScripts checks that every recovery_script that names a file
// (its first word holds a /) exists, relative to the playbook's directory.
func checkRecoveryScripts(pb *spec.Playbook, dir string) spec.Errors {
	var errs spec.Errors
	for _, name := range slices.Sorted(maps.Keys(pb.Handlers)) {
		h := pb.Handlers[name]
		for _, r := range h.Rules {
			fields := strings.Fields(r.RecoveryScript)
			if len(fields) == 0 || !strings.Contains(fields[0], "/") {
				continue
			}
			path := fields[0]
			if !filepath.IsAbs(path) {
				path = filepath.Join(dir, path)
			}
			if _, err := os.Stat(path); err != nil {
				line := r.RecoveryScriptLine
				if line == 0 {
					line = h.Line
				}
				errs = append(errs, &spec.Error{File: pb.File, Line: line, Msg: fmt.Sprintf("failure handler %q: recovery_script %s does not exist (looked for %s)", name, fields[0], path)})
			}
		}
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
	return errs
}

// unguardedStatus finds, in an http step's retry_when or stop_when, an
// ordering of status_code (`status_code >= 500`) with no test of
// status_code against nil anywhere in the expression; it returns the
// expression, unwrapped, to build the fix from, or "".
func unguardedStatus(src string) string {
	tree, err := parser.Parse(expr.Unwrap(src))
	if err != nil {
		return ""
	}
	v := &statusGuard{}
	ast.Walk(&tree.Node, v)
	if v.ordered && !v.guarded {
		return expr.Unwrap(src)
	}
	return ""
}

type statusGuard struct{ ordered, guarded bool }

func (g *statusGuard) Visit(node *ast.Node) {
	b, ok := (*node).(*ast.BinaryNode)
	if !ok {
		return
	}
	status := func(n ast.Node) bool { id, ok := n.(*ast.IdentifierNode); return ok && id.Value == "status_code" }
	null := func(n ast.Node) bool { _, ok := n.(*ast.NilNode); return ok }
	switch b.Operator {
	case "<", "<=", ">", ">=":
		if status(b.Left) || status(b.Right) {
			g.ordered = true
		}
	case "==", "!=":
		if status(b.Left) && null(b.Right) || null(b.Left) && status(b.Right) {
			g.guarded = true
		}
	case "??":
		if status(b.Left) {
			g.guarded = true
		}
	}
}

// checkRaisedType refuses a fail step that raises one of the engine's own
// error types: a condition matching the type could not tell the two apart.
func checkRaisedType(pb *spec.Playbook, s *spec.Step) *spec.Error {
	if s.Tool == nil || s.Tool.Kind != spec.FailKind {
		return nil
	}
	typ, _ := s.Tool.Spec["type"].(string)
	if !slices.Contains(contract.BuiltinErrorTypes, typ) {
		return nil
	}
	return &spec.Error{File: pb.File, Line: s.Tool.Line, Step: s.Name,
		Msg: fmt.Sprintf("fail tool: type %q is an error type the engine gives; a raised error needs a type of its own (such as no_rows), so that conditions tell the two apart", typ)}
}

// checkInputsFrom refuses an inputs.from that names a step which is not
// upstream of the step: its files would not be there when it starts.
func (c *checker) checkInputsFrom(s *spec.Step) spec.Errors {
	if s.Files == nil || len(s.Files.From) == 0 || c.pb.Broken(s.Name) {
		return nil
	}
	var errs spec.Errors
	upstream := c.upstreamOf(s)
	for i, name := range s.Files.From {
		if c.pb.Step(name) != nil && name != s.Name && !upstream[name] {
			errs = append(errs, &spec.Error{File: c.pb.File, Line: s.Files.FromLine(i), Step: s.Name,
				Msg: fmt.Sprintf("inputs.from names %q, which is not upstream of this step: add it to depends_on", name)})
		}
	}
	return errs
}

// TriggerType is what trigger.* holds in a playbook with triggers: what
// started the run (kind webhook, after or none), the hook and its
// delivery, or the upstream run's playbook, ID, status and result.
var TriggerType = types.Map{
	"kind": types.String, "hook": types.String, "delivery": types.String,
	"playbook": types.String, "run_id": types.String, "status": types.String, "result": types.Any,
}

// constantTimeCalls finds, in an expression, the first call of date,
// duration or timezone whose arguments are all written in it, and says
// why it fails when it does ("" when none does): it would fail the same
// way in every run (date('2026-13-45'), timezone('Mars/Base')).
func constantTimeCalls(root ast.Node, scope expr.Scope) string {
	var bad string
	ast.Find(root, func(n ast.Node) bool {
		if bad != "" {
			return false
		}
		var name string
		var args []ast.Node
		switch call := n.(type) {
		case *ast.BuiltinNode:
			name, args = call.Name, call.Arguments
		case *ast.CallNode:
			if id, ok := call.Callee.(*ast.IdentifierNode); ok {
				name, args = id.Value, call.Arguments
			}
		}
		if !slices.Contains([]string{"date", "duration", "timezone"}, name) || len(args) == 0 {
			return false
		}
		for _, a := range args {
			if _, literal := a.(*ast.StringNode); !literal {
				return false
			}
		}
		e, err := expr.CompileExprAt(n.String(), 0, scope, false)
		if err == nil {
			_, err = e.Eval(map[string]any{})
		}
		if err != nil {
			msg := expr.FirstLine(err.Error())
			msg = strings.TrimPrefix(msg, fmt.Sprintf("%q: ", n.String()))
			msg = strings.TrimSuffix(msg, " (1:1)")
			bad = "fails in every run: " + msg
		}
		return false
	})
	return bad
}
