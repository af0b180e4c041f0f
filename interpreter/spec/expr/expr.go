// Package expr compiles, evaluates and renders a playbook's expressions and
// templates, with the names each context declares (Scope). It imports
// expr-lang and nothing else of playbook's; `now` is disabled, so an
// expression is a function of the values it reads.
package expr

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"
)

// Scope says which names an expression may use.
type Scope int

const (
	// ScopeStep: workload, steps, execution_id, playbook, run, trigger (when, templates).
	ScopeStep Scope = iota
	// ScopeRetry adds result, error, exit_code, status_code, success, attempt.
	ScopeRetry
	// ScopeEnd adds failed_steps_count, total_steps, failed_steps,
	// warning_steps and warning_steps_count.
	ScopeEnd
)

// ScopeNames declares, per scope, each name and its type; any other name
// is a compile error. Values read from runs (results, workload) are Any:
// their shape is known only when the expression runs.
func ScopeNames(s Scope, extra ...string) types.Map {
	env := types.Map{
		"workload":     types.Any,
		"steps":        types.Any,
		"execution_id": types.String,
		"playbook":     types.Any,
		// run.logical_time: the time the run stands for (RFC 3339, UTC);
		// run.timed_out: whether the run's deadline has passed.
		"run": types.Any,
		// trigger: what started the run, in a playbook with triggers
		// (submit refuses it in one without).
		"trigger": types.Any,
	}
	switch s {
	case ScopeRetry:
		env["result"] = types.Any
		env["error"] = types.Any
		// Any: absent (nil) for tools that have none, like an http step's exit code.
		env["exit_code"] = types.Any
		env["status_code"] = types.Any
		env["success"] = types.Bool
		env["attempt"] = types.Int
	case ScopeEnd:
		env["failed_steps_count"] = types.Int
		env["total_steps"] = types.Int
		env["failed_steps"] = types.Array(types.String)
		env["warning_steps"] = types.Array(types.String)
		env["warning_steps_count"] = types.Int
	}
	for _, name := range extra {
		env[name] = types.Any
	}
	return env
}

// Expr is a compiled expression. Programs are safe for concurrent use.
type Expr struct {
	Source string
	Line   int
	Scope  Scope
	// StepRefs are the NAMEs of every steps.NAME it reads, checked at validation.
	StepRefs []string
	// WorkloadRefs are the KEYs of every workload.KEY it reads.
	WorkloadRefs []string
	// ReadsAll names the maps among `steps` and `workload` it reads other
	// than by a constant key (`steps[name]`, `len(workload)`): all of it.
	ReadsAll map[string]bool
	// ReadsRun: it reads `run` (run.logical_time).
	ReadsRun bool
	// ReadsTrigger: it reads `trigger` (what started the run), or the
	// whole environment.
	ReadsTrigger bool
	// ReadsLoop: it reads `loop` (a loop element's loop.index and
	// loop.length), or the whole environment.
	ReadsLoop bool

	program *vm.Program
	// broken is why a received expression did not compile (see
	// Retry.UnmarshalJSON); evaluating it returns this error.
	broken error
	// recompile compiles it under a Safety, whose programs safer keeps.
	recompile func(Safety) (*vm.Program, error)
	safer     *[everySafety + 1]nullSafe
	// readsZones: it calls date, timezone or .Local(); zonesOnHost, when
	// set, tells whether it looks zones up as expr-lang does, on the host
	// (LookUpZonesOnHost).
	readsZones  bool
	zonesOnHost func() bool
}

// BrokenExpr is an expression received that does not compile here:
// evaluating it returns err.
func BrokenExpr(src string, scope Scope, err error) *Expr {
	return &Expr{Source: src, Scope: scope, broken: err}
}

// CompileExpr compiles an expression of the given scope; a `{{ }}` wrapper
// is accepted. `now` is disabled: expressions must be deterministic.
func CompileExpr(src string, scope Scope, asBool bool) (*Expr, error) {
	return CompileExprAt(src, 0, scope, asBool)
}

// CompileExprAt compiles an expression written at line, whose scope also
// declares the names extra.
func CompileExprAt(src string, line int, scope Scope, asBool bool, extra ...string) (*Expr, error) {
	body := Unwrap(src)
	if strings.TrimSpace(body) == "" {
		return nil, fmt.Errorf("empty expression")
	}
	options := func(s Safety) []expr.Option {
		opts := []expr.Option{expr.Env(ScopeNames(scope, extra...)), expr.DisableBuiltin("now")}
		opts = append(opts, sortedMapBuiltins...)
		if s&hostZones == 0 {
			opts = append(opts, zoneBuiltins...)
			opts = append(opts, expr.Patch(localCalls{}))
		}
		if asBool {
			opts = append(opts, expr.AsBool())
		}
		return append(opts, safetyOptions(s)...)
	}
	refs := &readCollector{}
	// The read collector goes first, to see the calls as written.
	program, err := expr.Compile(body, append([]expr.Option{expr.Patch(refs)}, options(0)...)...)
	if err != nil {
		msg := FirstLine(err.Error())
		if m := dashedStep.FindStringSubmatch(body); m != nil {
			msg += fmt.Sprintf(": steps.%s reads steps.%s minus %s; write steps['%s']", m[1], m[2], m[3], m[1])
		}
		if strings.HasPrefix(msg, "unknown name now ") {
			msg += ": an expression does not read the clock (a replay would read another time); run.logical_time is the time the run stands for"
		}
		return nil, fmt.Errorf("%q: %s", body, msg)
	}
	recompile := func(s Safety) (*vm.Program, error) { return expr.Compile(body, options(s)...) }
	return &Expr{Source: body, Line: line, Scope: scope, StepRefs: refs.keys["steps"], WorkloadRefs: refs.keys["workload"], ReadsAll: refs.readsAll(), ReadsRun: refs.run || refs.dollarEnv,
		ReadsLoop: refs.loop || refs.dollarEnv, ReadsTrigger: refs.trigger || refs.dollarEnv, readsZones: refs.zones, program: program, recompile: recompile, safer: &[everySafety + 1]nullSafe{}}, nil
}

// dashedStep finds steps.NAME where NAME holds a dash, which an
// expression reads as a subtraction.
var dashedStep = regexp.MustCompile(`steps\.(([a-z0-9_]+)-([a-z0-9_-]+))`)

// Unwrap strips one `{{ }}` around a whole expression.
func Unwrap(src string) string {
	t := strings.TrimSpace(src)
	if strings.HasPrefix(t, "{{") && strings.HasSuffix(t, "}}") && strings.Count(t, "{{") == 1 {
		return strings.TrimSpace(t[2 : len(t)-2])
	}
	return t
}

// FirstLine is s up to its first line break.
func FirstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// readCollector records, while compiling, the constant keys read from
// `steps` and `workload` (steps.NAME, workload["KEY"]) and how often each
// of the two names appears at all: a name seen more often than read by a
// constant key is read some other way, as a whole.
type readCollector struct {
	keys      map[string][]string
	seen      map[string]int
	dollarEnv bool
	run       bool
	loop      bool
	trigger   bool
	zones     bool
}

func (c *readCollector) Visit(node *ast.Node) {
	c.zones = c.zones || readsZones(*node)
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		if c.seen == nil {
			c.seen = map[string]int{}
		}
		switch n.Value {
		case "steps", "workload":
			c.seen[n.Value]++
		case "$env":
			// $env.steps.a reads through the whole environment.
			c.dollarEnv = true
		case "run":
			c.run = true
		case "loop":
			c.loop = true
		case "trigger":
			c.trigger = true
		}
	case *ast.MemberNode:
		id, ok := n.Node.(*ast.IdentifierNode)
		if !ok || (id.Value != "steps" && id.Value != "workload") {
			return
		}
		if prop, ok := n.Property.(*ast.StringNode); ok {
			if c.keys == nil {
				c.keys = map[string][]string{}
			}
			c.keys[id.Value] = append(c.keys[id.Value], prop.Value)
		}
	}
}

func (c *readCollector) readsAll() map[string]bool {
	var all map[string]bool
	for _, name := range []string{"steps", "workload"} {
		if c.seen[name] > len(c.keys[name]) || c.dollarEnv {
			if all == nil {
				all = map[string]bool{}
			}
			all[name] = true
		}
	}
	return all
}

// Eval runs the expression against an environment.
func (e *Expr) Eval(env map[string]any) (any, error) { return e.EvalWith(env, 0) }

func (e *Expr) run(program *vm.Program, env map[string]any) (any, error) {
	out, err := expr.Run(program, env)
	if err != nil {
		return nil, fmt.Errorf("%q: %s%s", e.Source, FirstLine(err.Error()), truncatedNote(e.StepRefs, env))
	}
	return out, nil
}

// EvalBool runs a boolean expression; nil counts as false.
func (e *Expr) EvalBool(env map[string]any) (bool, error) {
	out, err := e.Eval(env)
	if err != nil {
		return false, err
	}
	return e.asBool(out)
}

func (e *Expr) asBool(out any) (bool, error) {
	switch b := out.(type) {
	case bool:
		return b, nil
	case nil:
		return false, nil
	}
	return false, fmt.Errorf("%q: result %v is not true or false", e.Source, out)
}

// Template is a string holding `{{ EXPR }}` parts. A string that is exactly
// one `{{ EXPR }}` renders to the expression's value, keeping its type.
type Template struct {
	Source string
	whole  *Expr
	parts  []templatePart
}

// templatePart is a template's literal text or one of its expressions.
type templatePart struct {
	text string
	expr *Expr
}

// IsTemplate tells whether a string holds `{{`.
func IsTemplate(s string) bool { return strings.Contains(s, "{{") }

// CompileTemplate compiles a template string with the names of a scope,
// plus extra names (a loop's iterator and `loop`).
func CompileTemplate(src string, scope Scope, extra ...string) (*Template, error) {
	t := &Template{Source: src}
	trimmed := strings.TrimSpace(src)
	if strings.HasPrefix(trimmed, "{{") && strings.HasSuffix(trimmed, "}}") && strings.Count(trimmed, "{{") == 1 {
		e, err := CompileExprAt(trimmed, 0, scope, false, extra...)
		if err != nil {
			return nil, err
		}
		t.whole = e
		return t, nil
	}
	rest := src
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			t.parts = append(t.parts, templatePart{text: rest})
			return t, nil
		}
		j := strings.Index(rest[i:], "}}")
		if j < 0 {
			return nil, fmt.Errorf("template %q: the {{ at %q is not closed by }}", src, clip(rest[i:], 24))
		}
		e, err := CompileExprAt(rest[i+2:i+j], 0, scope, false, extra...)
		if err != nil {
			return nil, err
		}
		t.parts = append(t.parts, templatePart{text: rest[:i]}, templatePart{expr: e})
		rest = rest[i+j+2:]
	}
}

// Exprs are the template's expressions, in order.
func (t *Template) Exprs() []*Expr {
	if t.whole != nil {
		return []*Expr{t.whole}
	}
	var exprs []*Expr
	for _, p := range t.parts {
		if p.expr != nil {
			exprs = append(exprs, p.expr)
		}
	}
	return exprs
}

// Render evaluates the template.
func (t *Template) Render(env map[string]any) (any, error) { return t.RenderWith(env, 0) }

// RenderWith evaluates the template under the rules s.
func (t *Template) RenderWith(env map[string]any, s Safety) (any, error) {
	if t.whole != nil {
		return t.whole.EvalWith(env, s)
	}
	var b strings.Builder
	for _, p := range t.parts {
		if p.expr == nil {
			b.WriteString(p.text)
			continue
		}
		v, err := p.expr.EvalWith(env, s)
		if err != nil {
			return nil, err
		}
		b.WriteString(Text(v))
	}
	return b.String(), nil
}

// Text formats a value spliced into text, an environment variable or a
// header: strings as they are, nil as nothing, everything else as JSON (so
// 3.0 prints as 3 and maps as objects).
func Text(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case nil:
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// TemplatesIn calls fn for every template string inside a tool spec value.
func TemplatesIn(v any, fn func(s string) error) error {
	switch t := v.(type) {
	case string:
		if IsTemplate(t) {
			return fn(t)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if err := TemplatesIn(t[k], fn); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range t {
			if err := TemplatesIn(e, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// RenderValue renders every template inside a value, returning a new value.
func RenderValue(v any, templates map[string]*Template, env map[string]any) (any, error) {
	return RenderValueWith(v, templates, env, 0)
}

// RenderValueWith is RenderValue under the rules s.
func RenderValueWith(v any, templates map[string]*Template, env map[string]any, s Safety) (any, error) {
	switch t := v.(type) {
	case string:
		if !IsTemplate(t) {
			return t, nil
		}
		return templates[t].RenderWith(env, s)
	case map[string]any:
		// Sorted: which of several failing templates is reported must not
		// depend on map order (the message reaches steps.X.error).
		out := make(map[string]any, len(t))
		for _, k := range slices.Sorted(maps.Keys(t)) {
			e := t[k]
			r, err := RenderValueWith(e, templates, env, s)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			r, err := RenderValueWith(e, templates, env, s)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// MarshalJSON writes an expression as its source: compiled programs do not
// travel; the side that reads one compiles it again (see spec.Retry).
func (e *Expr) MarshalJSON() ([]byte, error) { return json.Marshal(e.Source) }

// clip is s cut to n bytes, with "..." when it was longer.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}
