package interpreter

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/types"
)

// ParseStrict parses a playbook being submitted (validate, run, retry) and
// adds the checks Parse does not make, so that a frozen playbook accepted
// before they existed still replays: every expression and template is
// type-checked against what it may read (the workload's declared keys, the
// steps upstream of it, each step's fields and its tool's result shape),
// a `workflow` must have steps, and, when dir (the playbook's directory) is
// given, every recovery_script that names a file must exist. Errors are
// every problem of the file, in file order.
func ParseStrict(file string, src []byte, dir string) (*Playbook, error) {
	pb, err := parse(file, src)
	if pb == nil {
		return nil, err
	}
	errs := Errors{}.add(file, err)
	errs = append(errs, check(pb, dir)...)
	for _, e := range pb.submitErrs {
		errs = errs.add(file, e)
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return pb, nil
}

// maxSubmittedName is the longest playbook or step name: each becomes a
// directory name of at most maxPathName bytes once a run's suffix or a loop
// element's index is added.
const maxSubmittedName = maxPathName - 20

// check makes ParseStrict's own checks.
func check(pb *Playbook, dir string) Errors {
	var errs Errors
	if len(pb.Steps) == 1 && pb.Steps[0].Injected {
		errs = append(errs, &Error{File: pb.File, Line: pb.lines["workflow"], Msg: "workflow has no steps: a run would do nothing"})
	}
	errs = errs.add(pb.File, pb.CheckSchedule())
	if len(pb.Name) > maxSubmittedName {
		errs = append(errs, &Error{File: pb.File, Line: pb.lines["name"], Msg: fmt.Sprintf("metadata.name is %d bytes long: at most %d (a run's ID, the name and a suffix, names its log directory)", len(pb.Name), maxSubmittedName)})
	}
	c := &checker{pb: pb, workload: workloadType(pb.Workload)}
	for _, s := range pb.Steps {
		if len(s.Name) > maxSubmittedName {
			errs = append(errs, &Error{File: pb.File, Line: s.Line, Step: string([]rune(s.Name)[:20]) + "...", Msg: fmt.Sprintf("the step's name is %d bytes long: at most %d (it names the step's log directory, with a loop element's [index])", len(s.Name), maxSubmittedName)})
		}
		errs = append(errs, c.step(s)...)
	}
	for _, event := range []string{"on_failure", "on_success"} {
		src := pb.Notify.OnFailure
		if event == "on_success" {
			src = pb.Notify.OnSuccess
		}
		if IsTemplate(src) {
			errs = append(errs, c.template(nil, pb.lines["notify."+event], "notify."+event+".webhook", src, ScopeEnd, c.everyStep(), nil)...)
		}
	}
	if dir != "" {
		errs = append(errs, checkRecoveryScripts(pb, dir)...)
	}
	return errs
}

type checker struct {
	pb       *Playbook
	workload types.Map
}

// step checks every expression and template of a step.
func (c *checker) step(s *Step) Errors {
	upstream := c.upstream(s)
	itself := map[string]bool{s.Name: true}
	for n := range upstream {
		itself[n] = true
	}
	if s.Name == EndStep {
		upstream, itself = c.everyStep(), c.everyStep()
	}
	var errs Errors
	for _, r := range s.Next {
		if r.When != nil {
			errs = append(errs, c.expr(s, r.When.Line, "when", r.When.Source, ScopeStep, itself, nil, true)...)
		}
	}
	if s.Retry != nil {
		for _, e := range []struct {
			what string
			e    *Expr
		}{{"retry.retry_when", s.Retry.RetryWhen}, {"retry.stop_when", s.Retry.StopWhen}} {
			if e.e != nil {
				errs = append(errs, c.expr(s, e.e.Line, e.what, e.e.Source, ScopeRetry, itself, nil, true)...)
			}
		}
	}
	if s.SuccessWhen != nil {
		errs = append(errs, c.expr(s, s.SuccessWhen.Line, "success_when", s.SuccessWhen.Source, ScopeEnd, upstream, nil, true)...)
	}
	if s.Loop != nil && s.Loop.In != nil {
		errs = append(errs, c.expr(s, s.Loop.In.Line, "loop.in", s.Loop.In.Source, ScopeStep, upstream, nil, false)...)
	}
	if s.Tool != nil {
		scope, extra := toolScope(s)
		_ = templatesIn(s.Tool.Spec, func(src string) error {
			errs = append(errs, c.template(s, s.Tool.Line, "tool", src, scope, upstream, extra)...)
			return nil
		})
	}
	return errs
}

// template checks each expression of a template; one whose text does not
// compile at all was reported by validate already.
func (c *checker) template(s *Step, line int, what, src string, scope Scope, readable map[string]bool, extra []string) Errors {
	t, err := CompileTemplate(src, scope, extra...)
	if err != nil {
		return nil
	}
	var errs Errors
	for _, p := range append(t.parts, templatePart{expr: t.whole}) {
		if p.expr != nil {
			errs = append(errs, c.expr(s, line, what, p.expr.Source, scope, readable, extra, false)...)
		}
	}
	return errs
}

// expr checks one expression: the steps it reads are upstream, the
// workload keys it reads are declared, and it type-checks.
func (c *checker) expr(s *Step, line int, what, src string, scope Scope, readable map[string]bool, extra []string, asBool bool) Errors {
	at := func(format string, args ...any) *Error {
		e := &Error{File: c.pb.File, Line: line, Msg: fmt.Sprintf("%s: %q: ", what, src) + fmt.Sprintf(format, args...)}
		if s != nil {
			e.Step = s.Name
		}
		return e
	}
	tree, err := parser.Parse(src)
	if err != nil {
		return nil // validate reported it
	}
	refs := &refCollector{}
	ast.Walk(&tree.Node, refs)
	var errs Errors
	for _, name := range refs.steps {
		if c.pb.byName[name] == nil || readable[name] {
			continue // an unknown step was reported by validate
		}
		if s != nil && name == s.Name {
			errs = append(errs, at("reads steps.%s, the step itself, which has not run yet (its own next, retry_when and stop_when may read it)", name))
			continue
		}
		reader := "it"
		if s != nil {
			reader = fmt.Sprintf("%q", s.Name)
		}
		errs = append(errs, at("reads steps.%s, but step %q is not upstream of %s (it would read null): make it a predecessor through next or depends_on", name, name, reader))
	}
	for _, key := range refs.workload {
		if _, ok := c.workload[key]; !ok {
			errs = append(errs, at("reads workload.%s, which the workload section does not declare (%s)", key, c.declared()))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	opts := []expr.Option{expr.Env(c.env(s, scope, readable, extra)), expr.DisableBuiltin("now")}
	if asBool {
		opts = append(opts, expr.AsBool())
	}
	if _, err := expr.Compile(src, opts...); err != nil {
		return Errors{at("%s", FirstLine(err.Error()))}
	}
	return nil
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
// workload.KEY (or steps["NAME"], workload["KEY"]).
type refCollector struct{ steps, workload []string }

func (r *refCollector) Visit(node *ast.Node) {
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
	case "workload":
		r.workload = append(r.workload, prop.Value)
	}
}

// upstream is the set of a step's ancestors: every step with a path to it.
func (c *checker) upstream(s *Step) map[string]bool {
	seen := map[string]bool{}
	queue := []string{s.Name}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, a := range c.pb.incoming[n] {
			if !seen[a.From] && a.From != s.Name {
				seen[a.From] = true
				queue = append(queue, a.From)
			}
		}
	}
	return seen
}

// everyStep is what `end` and notify read: every step.
func (c *checker) everyStep() map[string]bool {
	all := map[string]bool{}
	for _, s := range c.pb.Steps {
		all[s.Name] = true
	}
	return all
}

// env is the typed environment of an expression: the names of its scope,
// with the workload's declared keys and the readable steps' shapes.
func (c *checker) env(s *Step, scope Scope, readable map[string]bool, extra []string) types.Map {
	steps := types.Map{}
	for name := range readable {
		if st := c.pb.byName[name]; st != nil {
			steps[name] = types.Map{
				"status":   types.String,
				"result":   resultType(st, true),
				"error":    types.Map{"type": types.String, "message": types.String, "details": types.Any},
				"attempts": types.Int,
			}
		}
	}
	env := scopeNames(scope)
	env["workload"] = c.workload
	env["steps"] = steps
	env["playbook"] = types.Map{"name": types.String, "description": types.String}
	if scope == ScopeRetry {
		// One attempt's outcome: for a loop, one element's.
		env["result"] = resultType(s, false)
		env["error"] = types.Map{"type": types.String, "message": types.String}
	}
	if len(extra) == 2 {
		env[extra[0]] = types.Any
		env[extra[1]] = types.Map{"index": types.Int, "length": types.Int}
	}
	return env
}

// resultType is a step's result type; a loop's is the list of its
// elements' results when whole is set.
func resultType(s *Step, whole bool) types.Type {
	var t types.Type = types.Any
	if s.Tool != nil {
		if shaped, ok := toolKinds[s.Tool.Kind].spec.(resultShaper); ok {
			t = shaped.resultShape()
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
func checkRecoveryScripts(pb *Playbook, dir string) Errors {
	var errs Errors
	for _, name := range sortedKeys(pb.Handlers) {
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
				errs = append(errs, &Error{File: pb.File, Line: h.Line, Msg: fmt.Sprintf("failure handler %q: recovery_script %s does not exist (looked for %s)", name, fields[0], path)})
			}
		}
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
	return errs
}

// toolScope is the scope of a step's tool templates, with the names a loop
// adds (its iterator and `loop`).
func toolScope(s *Step) (Scope, []string) {
	scope := ScopeStep
	if s.Name == EndStep {
		scope = ScopeEnd
	}
	if s.Loop != nil {
		return scope, []string{s.Loop.Iterator, "loop"}
	}
	return scope, nil
}
