package interpreter

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// Parse reads and validates a playbook. file is used in error messages only.
// Every error is an *Error naming the file, the line and, where there is one,
// the step.
//
// Parse is what the workflow runs on a frozen playbook, so it never gets
// stricter; the checks added since a playbook could be submitted run in
// ParseStrict, at submission only (docs/VERSIONING.md).
func Parse(file string, src []byte) (*Playbook, error) {
	pb, err := parse(file, src)
	if err != nil {
		return nil, err
	}
	return pb, nil
}

// parse decodes and validates. The playbook is nil when decoding failed;
// when only validation failed it comes back with the errors, so that
// ParseStrict can add its own.
func parse(file string, src []byte) (*Playbook, error) {
	d := &decoder{file: file, lines: map[string]int{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, d.yamlError(err, src)
	}
	if len(doc.Content) == 0 {
		return nil, &Error{File: file, Line: 1, Msg: "empty playbook"}
	}
	pb := &Playbook{File: file, FailureMode: FailureStop, Workload: map[string]any{}, LostAttempts: DefaultLostAttempts}
	if err := d.playbook(doc.Content[0], pb); err != nil {
		return nil, err
	}
	pb.submitErrs = d.submitErrs
	pb.lines = d.lines
	return pb, validate(pb)
}

// decoder walks YAML nodes; step is the step being decoded, for errors.
type decoder struct {
	file string
	step string
	// submitErrs are problems CheckSubmit reports (see submit.go).
	submitErrs []error
	// lines remembers where some keys are, for checks made after decoding.
	lines map[string]int
}

func (d *decoder) errf(n *yaml.Node, format string, args ...any) error {
	return &Error{File: d.file, Line: n.Line, Step: d.step, Msg: fmt.Sprintf(format, args...)}
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func (d *decoder) yamlError(err error, src []byte) error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		if tab := tabIndentedLine(src, m[2], line); tab > 0 {
			return &Error{File: d.file, Line: tab, Msg: "tabs cannot indent YAML: indent with spaces"}
		}
		if at, hint := unquotedTemplateError(src); at > 0 {
			return &Error{File: d.file, Line: at, Msg: hint}
		}
		return &Error{File: d.file, Line: line, Msg: m[2]}
	}
	return &Error{File: d.file, Msg: strings.TrimPrefix(msg, "yaml: ")}
}

// fields calls the handler of each key of a mapping node; a key without a
// handler is an error, so a misspelt key never vanishes.
func (d *decoder) fields(n *yaml.Node, what string, handlers map[string]func(v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return d.errf(n, "%s must be a mapping", what)
	}
	// Every key is decoded even after a bad one, so that one pass reports
	// every error of the mapping.
	var errs Errors
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		h, ok := handlers[k.Value]
		switch {
		case !ok:
			errs = errs.add(d.file, d.errf(k, "unknown key %q in %s (known: %s)", k.Value, what, strings.Join(sortedKeys(handlers), ", ")))
		case seen[k.Value]:
			errs = errs.add(d.file, d.errf(k, "key %q given twice in %s", k.Value, what))
		default:
			seen[k.Value] = true
			errs = errs.add(d.file, h(v))
		}
	}
	return errs.err()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (d *decoder) notYet(key string) func(v *yaml.Node) error {
	return func(v *yaml.Node) error { return d.errf(v, "%s is not supported yet", key) }
}

func (d *decoder) str(n *yaml.Node, what string, out *string) error {
	if err := d.unquotedTemplate(n, what); err != nil {
		return err
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return d.errf(n, "%s must be a string", what)
	}
	*out = n.Value
	return nil
}

func (d *decoder) boolean(n *yaml.Node, what string, out *bool) error {
	if n.Kind != yaml.ScalarNode || n.Decode(out) != nil {
		return d.errf(n, "%s must be true or false, not %q", what, n.Value)
	}
	return nil
}

func (d *decoder) integer(n *yaml.Node, what string, out *int) error {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(out) != nil {
		return d.errf(n, "%s must be a whole number, not %q", what, n.Value)
	}
	return nil
}

// duration accepts Go durations ("1m30s", "500ms") or a number of seconds.
func (d *decoder) duration(n *yaml.Node, what string, out *time.Duration) error {
	if n.Kind == yaml.ScalarNode {
		if n.Tag == "!!int" || n.Tag == "!!float" {
			if secs, err := strconv.ParseFloat(n.Value, 64); err == nil && secs >= 0 {
				*out = time.Duration(secs * float64(time.Second))
				return nil
			}
		} else if v, err := time.ParseDuration(n.Value); err == nil && v >= 0 {
			*out = v
			return nil
		}
	}
	return d.errf(n, "%s: bad duration %q (write e.g. 30s, 10m, 1h30m)", what, n.Value)
}

// value decodes any YAML value into plain Go values (maps, lists, scalars).
func (d *decoder) value(n *yaml.Node, what string) (any, error) {
	if err := d.checkKeys(n, what); err != nil {
		return nil, err
	}
	var v any
	if err := d.unquotedTemplate(n, what); err != nil {
		return nil, err
	}
	if err := n.Decode(&v); err != nil {
		return nil, d.errf(n, "%s: %v", what, err)
	}
	return normalize(v), nil
}

// normalize turns YAML's map[string]interface{} trees into map[string]any
// with string keys, as JSON would have them.
func normalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = normalize(e)
		}
		return t
	case map[any]any:
		// Keys that read alike (1 and "1") are refused at submission; for
		// runs that have them, the same one wins every time.
		m := make(map[string]any, len(t))
		for _, k := range sortedAnyKeys(t) {
			m[fmt.Sprint(k)] = normalize(t[k])
		}
		return m
	case []any:
		for i, e := range t {
			t[i] = normalize(e)
		}
		return t
	}
	return v
}

func (d *decoder) playbook(n *yaml.Node, pb *Playbook) error {
	var steps *yaml.Node
	err := d.fields(n, "the playbook", map[string]func(v *yaml.Node) error{
		"apiVersion": func(v *yaml.Node) error {
			var s string
			if err := d.str(v, "apiVersion", &s); err != nil {
				return err
			}
			if s != "playbook/v1" {
				return d.errf(v, "apiVersion %q is not known (use playbook/v1)", s)
			}
			return nil
		},
		"kind": func(v *yaml.Node) error {
			var s string
			if err := d.str(v, "kind", &s); err != nil {
				return err
			}
			if s != "Playbook" {
				return d.errf(v, "kind %q is not known (use Playbook)", s)
			}
			return nil
		},
		"metadata": func(v *yaml.Node) error {
			return d.fields(v, "metadata", map[string]func(v *yaml.Node) error{
				"name": func(v *yaml.Node) error {
					if err := d.str(v, "metadata.name", &pb.Name); err != nil {
						return err
					}
					if !namePattern.MatchString(pb.Name) {
						return d.errf(v, "metadata.name %q must match [a-z0-9][a-z0-9_-]*", pb.Name)
					}
					return nil
				},
				"description": func(v *yaml.Node) error { return d.str(v, "metadata.description", &pb.Description) },
			})
		},
		"workload": func(v *yaml.Node) error {
			if v.Kind != yaml.MappingNode {
				return d.errf(v, "workload must be a mapping")
			}
			w, err := d.value(v, "workload")
			if err != nil {
				return err
			}
			pb.Workload = w.(map[string]any)
			return nil
		},
		"failure_mode": func(v *yaml.Node) error {
			switch FailureMode(v.Value) {
			case FailureContinue, FailureStop, FailureCancel:
				pb.FailureMode = FailureMode(v.Value)
				return nil
			}
			return d.errf(v, "failure_mode must be continue, stop or cancel, not %q", v.Value)
		},
		"use_pending_failed": func(v *yaml.Node) error { return d.boolean(v, "use_pending_failed", &pb.UsePendingFailed) },
		"pending_timeout":    func(v *yaml.Node) error { return d.duration(v, "pending_timeout", &pb.PendingTimeout) },
		"notify":             func(v *yaml.Node) error { return d.notify(v, &pb.Notify) },
		"failure_handlers":   func(v *yaml.Node) (err error) { pb.Handlers, err = d.handlers(v); return err },
		"workflow":           func(v *yaml.Node) error { steps = v; return nil },
		"lost_attempts":      func(v *yaml.Node) error { return d.lostAttempts(v, &pb.LostAttempts) },
		"schedule":           func(v *yaml.Node) (err error) { pb.Schedule, err = d.schedule(v); return err },
	})
	// A required key may be missing because it is misspelt: then the
	// unknown key says it, and "required" would only repeat it.
	errs := Errors{}.add(d.file, err)
	switch {
	case err == nil && pb.Name == "":
		errs = errs.add(d.file, d.errf(n, "metadata.name is required"))
	case err == nil && steps == nil:
		errs = errs.add(d.file, d.errf(n, "workflow (the list of steps) is required"))
	case steps != nil && steps.Kind != yaml.SequenceNode:
		errs = errs.add(d.file, d.errf(steps, "workflow must be a list of steps"))
	}
	if steps == nil || steps.Kind != yaml.SequenceNode {
		return errs.err()
	}
	pb.byName = map[string]*Step{}
	for _, sn := range steps.Content {
		s, err := d.stepNode(sn)
		if err != nil {
			errs = errs.add(d.file, err)
			continue
		}
		if prev := pb.byName[s.Name]; prev != nil {
			errs = errs.add(d.file, &Error{File: d.file, Line: s.Line, Step: s.Name, Msg: fmt.Sprintf("step name used twice (first at line %d)", prev.Line)})
			continue
		}
		pb.byName[s.Name] = s
		pb.Steps = append(pb.Steps, s)
		if s.lostAttempts == nil {
			s.LostAttempts = pb.LostAttempts
		}
	}
	d.lines["workflow"] = steps.Line
	return errs.err()
}

func (d *decoder) stepNode(n *yaml.Node) (*Step, error) {
	d.step = ""
	s := &Step{Line: n.Line}
	if n.Kind != yaml.MappingNode {
		return nil, d.errf(n, "each item of workflow must be a mapping with a `step` key")
	}
	// The name comes first so that every later error can name the step.
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "step" {
			if err := d.str(n.Content[i+1], "step", &s.Name); err != nil {
				return nil, err
			}
		}
	}
	if s.Name == "" {
		return nil, d.errf(n, "a step has no `step` name")
	}
	d.step = s.Name
	if !namePattern.MatchString(s.Name) {
		return nil, d.errf(n, "step name must match [a-z0-9][a-z0-9_-]*")
	}
	var retries *int
	var retryDelay *time.Duration
	var retryNode, onFailureNode *yaml.Node
	var lostNode, onLostNode *yaml.Node
	err := d.fields(n, "a step", map[string]func(v *yaml.Node) error{
		"step": func(*yaml.Node) error { return nil },
		"desc": func(v *yaml.Node) error { return d.str(v, "desc", &s.Desc) },
		"tool": func(v *yaml.Node) (err error) { s.Tool, err = d.tool(v); return err },
		"timeout": func(v *yaml.Node) error {
			return d.duration(v, "timeout", &s.Timeout)
		},
		"heartbeat_timeout": func(v *yaml.Node) error {
			return d.duration(v, "heartbeat_timeout", &s.HeartbeatTimeout)
		},
		"retry": func(v *yaml.Node) (err error) { retryNode = v; s.Retry, err = d.retry(v); return err },
		"retries": func(v *yaml.Node) error {
			retries = new(int)
			if err := d.integer(v, "retries", retries); err != nil {
				return err
			}
			if *retries < 0 {
				return d.errf(v, "retries must not be negative")
			}
			d.checkAttempts(v, "retries", *retries+1)
			return nil
		},
		"retry_delay": func(v *yaml.Node) error {
			retryDelay = new(time.Duration)
			return d.duration(v, "retry_delay", retryDelay)
		},
		"next":       func(v *yaml.Node) (err error) { s.Next, err = d.next(v); return err },
		"depends_on": func(v *yaml.Node) (err error) { s.DependsOn, err = d.names(v, "depends_on"); return err },
		"on_failure": func(v *yaml.Node) error {
			onFailureNode = v
			if v.Value != "run" && v.Value != "skip" {
				return d.errf(v, "on_failure must be run or skip, not %q", v.Value)
			}
			s.OnFailureRun = v.Value == "run"
			return nil
		},
		"success_when": func(v *yaml.Node) error {
			if s.Name != EndStep {
				return d.errf(v, "success_when belongs on the end step only")
			}
			var src string
			if err := d.str(v, "success_when", &src); err != nil {
				return err
			}
			e, err := compileExpr(src, v.Line, ScopeEnd, true)
			if err != nil {
				return d.errf(v, "success_when: %v", err)
			}
			s.SuccessWhen = e
			return nil
		},
		"loop": func(v *yaml.Node) (err error) { s.Loop, err = d.loop(v); return err },
		"failure_handler": func(v *yaml.Node) error {
			s.failureHandlerRefLine = v.Line
			return d.str(v, "failure_handler", &s.failureHandlerRef)
		},
		"lost_attempts": func(v *yaml.Node) error {
			lostNode, s.lostAttempts = v, new(int)
			return d.lostAttempts(v, s.lostAttempts)
		},
		"on_lost": func(v *yaml.Node) error {
			onLostNode = v
			if v.Value != "retry" && v.Value != "fail" {
				return d.errf(v, "on_lost must be retry or fail, not %q", v.Value)
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	if retries != nil || retryDelay != nil {
		if retryNode != nil {
			return nil, d.errf(retryNode, "give either retry or retries/retry_delay, not both")
		}
		r := Retry{MaxAttempts: 1, Multiplier: 1}
		if retries != nil {
			r.MaxAttempts = *retries + 1
		}
		if retryDelay != nil {
			r.InitialDelay, r.MaxDelay = *retryDelay, *retryDelay
		} else {
			r.InitialDelay, r.MaxDelay = time.Second, time.Second
		}
		s.Retry = &r
	}
	if err := d.onLost(s, lostNode, onLostNode); err != nil {
		return nil, err
	}
	if s.Loop != nil && s.Tool == nil {
		return nil, d.errf(n, "loop needs a tool to run for each element")
	}
	if s.Loop != nil && s.Tool.Kind == "playbook" {
		d.refuse(n, "a playbook tool cannot run in a loop: write the loop inside the sub-playbook, or list its runs as steps")
	}
	if s.Tool != nil && s.Tool.Kind == "playbook" && s.Retry != nil {
		return nil, d.errf(n, "retry does not apply to a playbook step: the sub-playbook's own steps retry")
	}
	if s.Name == EndStep {
		switch {
		case len(s.Next) > 0:
			return nil, d.errf(n, "end is the terminal step: it has no next")
		case len(s.DependsOn) > 0:
			return nil, d.errf(n, "end runs after every other step: it has no depends_on")
		case s.Retry != nil && s.Tool == nil:
			return nil, d.errf(n, "retry needs a tool")
		case onFailureNode != nil:
			return nil, d.errf(onFailureNode, "end always runs: on_failure does not apply to it")
		}
	}
	return s, nil
}

func (d *decoder) tool(n *yaml.Node) (*Tool, error) {
	if n.Kind != yaml.MappingNode {
		return nil, d.errf(n, "tool must be a mapping with a kind")
	}
	t := &Tool{Line: n.Line, Spec: map[string]any{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "kind" {
			t.Kind = n.Content[i+1].Value
		}
	}
	if t.Kind == "" {
		return nil, d.errf(n, "tool has no kind (one of: %s)", strings.Join(ToolKinds(), ", "))
	}
	kind, ok := toolKinds[t.Kind]
	if !ok {
		return nil, d.errf(n, "unknown tool kind %q (one of: %s)", t.Kind, strings.Join(ToolKinds(), ", "))
	}
	handlers := map[string]func(v *yaml.Node) error{"kind": func(*yaml.Node) error { return nil }}
	for _, f := range kind.fields {
		handlers[f.key] = func(v *yaml.Node) error {
			val, err := d.value(v, f.key)
			if err != nil {
				return err
			}
			if err := f.check(val); err != nil {
				return d.errf(v, "tool %s: %v", f.key, err)
			}
			t.Spec[f.key] = val
			return nil
		}
	}
	if err := d.fields(n, t.Kind+" tool", handlers); err != nil {
		return nil, err
	}
	spec := kind.newSpec()
	if err := DecodeTool(t.Spec, spec); err != nil {
		return nil, d.errf(n, "%s tool: %v", t.Kind, err)
	}
	if msg := spec.check(func(field string) bool { return t.Spec[field] != nil }); msg != "" {
		return nil, d.errf(n, "%s", msg)
	}
	return t, nil
}

func (d *decoder) retry(n *yaml.Node) (*Retry, error) {
	r := DefaultRetry()
	if n.Kind == yaml.ScalarNode {
		switch n.Tag {
		case "!!bool":
			var on bool
			_ = n.Decode(&on)
			if !on {
				return nil, nil
			}
			return &r, nil
		case "!!int":
			if err := d.integer(n, "retry", &r.MaxAttempts); err != nil {
				return nil, err
			}
			if r.MaxAttempts < 1 {
				return nil, d.errf(n, "retry: attempts must be at least 1")
			}
			d.checkAttempts(n, "retry", r.MaxAttempts)
			return &r, nil
		}
		return nil, d.errf(n, "retry must be true, a number of attempts, or a mapping")
	}
	expr := func(name string, out **Expr) func(v *yaml.Node) error {
		return func(v *yaml.Node) error {
			var src string
			if err := d.str(v, "retry."+name, &src); err != nil {
				return err
			}
			e, err := compileExpr(src, v.Line, ScopeRetry, true)
			if err != nil {
				return d.errf(v, "retry.%s: %v", name, err)
			}
			*out = e
			return nil
		}
	}
	err := d.fields(n, "retry", map[string]func(v *yaml.Node) error{
		"max_attempts": func(v *yaml.Node) error {
			if err := d.integer(v, "retry.max_attempts", &r.MaxAttempts); err != nil {
				return err
			}
			if r.MaxAttempts < 1 {
				return d.errf(v, "retry.max_attempts must be at least 1")
			}
			d.checkAttempts(v, "retry.max_attempts", r.MaxAttempts)
			return nil
		},
		"initial_delay": func(v *yaml.Node) error { return d.duration(v, "retry.initial_delay", &r.InitialDelay) },
		"max_delay":     func(v *yaml.Node) error { return d.duration(v, "retry.max_delay", &r.MaxDelay) },
		"backoff_multiplier": func(v *yaml.Node) error {
			if v.Decode(&r.Multiplier) != nil || r.Multiplier < 1 {
				return d.errf(v, "retry.backoff_multiplier must be a number >= 1, not %q", v.Value)
			}
			return nil
		},
		"jitter":     func(v *yaml.Node) error { return d.boolean(v, "retry.jitter", &r.Jitter) },
		"retry_when": expr("retry_when", &r.RetryWhen),
		"stop_when":  expr("stop_when", &r.StopWhen),
	})
	if err != nil {
		return nil, err
	}
	if r.MaxDelay < r.InitialDelay {
		return nil, d.errf(n, "retry.max_delay (%s) is shorter than retry.initial_delay (%s)", r.MaxDelay, r.InitialDelay)
	}
	return &r, nil
}

// names reads a step name, a list of names, or NoETL's {step: NAME} forms.
func (d *decoder) names(n *yaml.Node, what string) ([]string, error) {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	var out []string
	for _, it := range items {
		name, err := d.stepRef(it, what)
		if err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	return out, nil
}

func (d *decoder) stepRef(n *yaml.Node, what string) (string, error) {
	if n.Kind == yaml.ScalarNode && n.Value != "" {
		return n.Value, nil
	}
	if n.Kind == yaml.MappingNode && len(n.Content) == 2 && n.Content[0].Value == "step" && n.Content[1].Kind == yaml.ScalarNode {
		return n.Content[1].Value, nil
	}
	return "", d.errf(n, "%s: expected a step name or {step: NAME}", what)
}

// next reads `next`: a name, a list of names, or when/then items closed by
// an optional else.
func (d *decoder) next(n *yaml.Node) ([]NextRule, error) {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	var rules []NextRule
	conditional := false
	for i, it := range items {
		isRule := it.Kind == yaml.MappingNode && !(len(it.Content) == 2 && it.Content[0].Value == "step")
		if !isRule {
			if conditional {
				return nil, d.errf(it, "next: a plain step name cannot follow when/else items")
			}
			name, err := d.stepRef(it, "next")
			if err != nil {
				return nil, err
			}
			rules = append(rules, NextRule{Then: []string{name}, Line: it.Line})
			continue
		}
		if len(rules) > 0 && !conditional {
			return nil, d.errf(it, "next: when/else items cannot follow plain step names")
		}
		conditional = true
		r := NextRule{Line: it.Line}
		var thenNode *yaml.Node
		err := d.fields(it, "a next item", map[string]func(v *yaml.Node) error{
			"when": func(v *yaml.Node) error {
				var src string
				if err := d.str(v, "when", &src); err != nil {
					return err
				}
				e, err := compileExpr(src, v.Line, ScopeStep, true)
				if err != nil {
					return d.errf(v, "when: %v", err)
				}
				r.When = e
				return nil
			},
			"then": func(v *yaml.Node) (err error) { thenNode = v; r.Then, err = d.names(v, "then"); return err },
			"else": func(v *yaml.Node) (err error) { r.Else = true; r.Then, err = d.names(v, "else"); return err },
		})
		if err != nil {
			return nil, err
		}
		switch {
		case r.Else && (r.When != nil || thenNode != nil):
			return nil, d.errf(it, "next: an else item has no when or then")
		case r.Else && i != len(items)-1:
			return nil, d.errf(it, "next: else must be the last item")
		case !r.Else && r.When == nil:
			return nil, d.errf(it, "next: item needs when (or else)")
		case !r.Else && thenNode == nil:
			return nil, d.errf(it, "next: when item needs then")
		}
		rules = append(rules, r)
	}
	return rules, nil
}

func (d *decoder) notify(n *yaml.Node, out *Notify) error {
	hook := func(event string, dst *string) func(v *yaml.Node) error {
		return func(v *yaml.Node) error {
			return d.fields(v, "notify."+event, map[string]func(v *yaml.Node) error{
				"webhook": func(v *yaml.Node) error {
					if err := d.str(v, "notify."+event+".webhook", dst); err != nil {
						return err
					}
					d.lines["notify."+event] = v.Line
					if IsTemplate(*dst) {
						if _, err := CompileTemplate(*dst, ScopeEnd); err != nil {
							return d.errf(v, "notify.%s.webhook: %v", event, err)
						}
						return nil
					}
					if !strings.HasPrefix(*dst, "http://") && !strings.HasPrefix(*dst, "https://") {
						return d.errf(v, "notify.%s.webhook must be an http:// or https:// URL, not %q", event, *dst)
					}
					return nil
				},
			})
		}
	}
	return d.fields(n, "notify", map[string]func(v *yaml.Node) error{
		"on_failure": hook("on_failure", &out.OnFailure),
		"on_success": hook("on_success", &out.OnSuccess),
	})
}

func (d *decoder) handlers(n *yaml.Node) (map[string]*FailureHandler, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, d.errf(n, "failure_handlers must be a list of {name, rules}")
	}
	out := map[string]*FailureHandler{}
	for _, hn := range n.Content {
		h := &FailureHandler{Line: hn.Line}
		var rulesNode *yaml.Node
		err := d.fields(hn, "a failure handler", map[string]func(v *yaml.Node) error{
			"name":  func(v *yaml.Node) error { return d.str(v, "failure handler name", &h.Name) },
			"rules": func(v *yaml.Node) error { rulesNode = v; return nil },
		})
		if err != nil {
			return nil, err
		}
		if h.Name == "" {
			return nil, d.errf(hn, "a failure handler has no name")
		}
		if prev := out[h.Name]; prev != nil {
			return nil, d.errf(hn, "failure handler %q defined twice (first at line %d)", h.Name, prev.Line)
		}
		if rulesNode == nil || rulesNode.Kind != yaml.SequenceNode || len(rulesNode.Content) == 0 {
			return nil, d.errf(hn, "failure handler %q needs a list of rules", h.Name)
		}
		for _, rn := range rulesNode.Content {
			r := ExitCodeRule{MaxRetries: DefaultMaxRetries}
			var codesNode *yaml.Node
			err := d.fields(rn, "an exit-code rule", map[string]func(v *yaml.Node) error{
				"exit_codes": func(v *yaml.Node) error {
					codesNode = v
					if v.Kind != yaml.SequenceNode {
						return d.errf(v, "exit_codes must be a list of numbers")
					}
					for _, c := range v.Content {
						var code int
						if err := d.integer(c, "exit_codes", &code); err != nil {
							return err
						}
						r.ExitCodes = append(r.ExitCodes, code)
					}
					return nil
				},
				"match_all_exit_codes": func(v *yaml.Node) error { return d.boolean(v, "match_all_exit_codes", &r.MatchAll) },
				"max_retries": func(v *yaml.Node) error {
					if err := d.integer(v, "max_retries", &r.MaxRetries); err != nil {
						return err
					}
					if r.MaxRetries < 0 {
						return d.errf(v, "max_retries must not be negative")
					}
					d.checkAttempts(v, "max_retries", r.MaxRetries+1)
					return nil
				},
				"recovery_script": func(v *yaml.Node) error { return d.str(v, "recovery_script", &r.RecoveryScript) },
			})
			if err != nil {
				return nil, err
			}
			if (codesNode == nil) == !r.MatchAll {
				return nil, d.errf(rn, "an exit-code rule needs either exit_codes or match_all_exit_codes: true")
			}
			h.Rules = append(h.Rules, r)
		}
		out[h.Name] = h
	}
	return out, nil
}

func (d *decoder) loop(n *yaml.Node) (*Loop, error) {
	l := &Loop{Iterator: "item", MaxInFlight: DefaultMaxInFlight}
	var mode string
	err := d.fields(n, "loop", map[string]func(v *yaml.Node) error{
		"in": func(v *yaml.Node) error {
			if v.Kind == yaml.SequenceNode {
				items, err := d.value(v, "loop.in")
				if err != nil {
					return err
				}
				l.Items = items.([]any)
				return nil
			}
			var src string
			if err := d.str(v, "loop.in", &src); err != nil {
				return err
			}
			e, err := compileExpr(src, v.Line, ScopeStep, false)
			if err != nil {
				return d.errf(v, "loop.in: %v", err)
			}
			l.In = e
			return nil
		},
		"iterator": func(v *yaml.Node) error {
			if err := d.str(v, "loop.iterator", &l.Iterator); err != nil {
				return err
			}
			if !identifier.MatchString(l.Iterator) || scopeNames(ScopeEnd)[l.Iterator] != nil || l.Iterator == "loop" {
				return d.errf(v, "loop.iterator %q must be a new name (letters, digits, _)", l.Iterator)
			}
			return nil
		},
		"mode": func(v *yaml.Node) error {
			mode = v.Value
			if mode != "sequential" && mode != "parallel" {
				return d.errf(v, "loop.mode must be sequential or parallel, not %q", mode)
			}
			l.Parallel = mode == "parallel"
			return nil
		},
		"max_in_flight": func(v *yaml.Node) error {
			if err := d.integer(v, "loop.max_in_flight", &l.MaxInFlight); err != nil {
				return err
			}
			if l.MaxInFlight < 1 {
				return d.errf(v, "loop.max_in_flight must be at least 1")
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	if l.In == nil && l.Items == nil {
		return nil, d.errf(n, "loop needs in: the list to iterate (an expression, or a YAML list)")
	}
	if !l.Parallel {
		l.MaxInFlight = 1
	}
	return l, nil
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// lostAttempts reads a `lost_attempts` count: a whole number, 0 or more.
func (d *decoder) lostAttempts(v *yaml.Node, out *int) error {
	if err := d.integer(v, "lost_attempts", out); err != nil {
		return err
	}
	if *out < 0 {
		return d.errf(v, "lost_attempts must not be negative")
	}
	return nil
}

// onLost applies a step's `on_lost` and checks it and `lost_attempts` fit
// the step: `on_lost: fail` retries no lost attempt, and neither key means
// anything to a step that runs no activity of its own.
func (d *decoder) onLost(s *Step, lostNode, onLostNode *yaml.Node) error {
	if onLostNode != nil && onLostNode.Value == "fail" {
		if lostNode != nil && *s.lostAttempts > 0 {
			return d.errf(lostNode, "lost_attempts: %d contradicts on_lost: fail (a lost attempt fails the step)", *s.lostAttempts)
		}
		s.lostAttempts = new(int)
	}
	if s.lostAttempts != nil {
		s.LostAttempts = *s.lostAttempts
	}
	for i, n := range []*yaml.Node{lostNode, onLostNode} {
		key := []string{"lost_attempts", "on_lost"}[i]
		switch {
		case n == nil:
		case s.Tool == nil:
			return d.errf(n, "%s needs a tool", key)
		case s.Tool.Kind == "playbook":
			return d.errf(n, "%s does not apply to a playbook step: the sub-playbook's own steps retry their lost attempts", key)
		}
	}
	return nil
}
