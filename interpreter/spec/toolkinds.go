package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"playbook/interpreter/spec/expr"

	"github.com/expr-lang/expr/types"
)

// A tool kind is one Go type below: its fields, under the names a playbook
// writes and the activity receives, and its checks. Parse reads a tool's
// fields by that type (which keys exist, what shape each value has, what is
// required); Schema reads it too, with the tags `required:"true"` and
// `doc`. The activity decodes the step's rendered fields into the same
// type and runs it. Adding a kind is adding a type here, listed in
// toolKinds, and its runner in activities/.

// ToolSpec is the type of one tool kind's fields.
type ToolSpec interface {
	// Kind is the name a playbook gives it in `tool.kind`.
	Kind() string
	// check says what a tool as written lacks, or holds where a template
	// must not be: fields are as the file gave them, each of its type's
	// shape, templates unrendered; field names the field at fault, if one
	// is (its line is the problem's). "" when fine.
	check(fields map[string]any) (field, problem string)
}

// strictTool is a tool kind with problems refused at submission only:
// accepted before, the workflow's re-parse still accepts them.
type strictTool interface {
	strictCheck(fields map[string]any) (field, problem string)
}

// processTool is a tool kind that runs a process: it has an exit code,
// which failure handlers' rules match.
type processTool interface{ runsProcess() }

// resultShaper is a tool kind whose result has a known shape, which
// expressions reading it are checked against; other kinds' results are
// whatever the tool returned.
type resultShaper interface{ resultShape() types.Map }

// toolKinds are the tool kinds, by name.
var toolKinds = kindsByName(&ShellTool{}, &HTTPTool{}, &PythonTool{}, &NoopTool{}, &FailTool{}, &PlaybookTool{},
	&ApprovalTool{}, &WaitTool{}, &WaitEventTool{})

// ShellTool runs `/bin/sh -c command`.
type ShellTool struct {
	Command string  `json:"command" required:"true" doc:"The shell text run by /bin/sh -c; no templates: pass values through env."`
	Env     EnvVars `json:"env" doc:"Environment variables (plain values; templates allowed; {secret: NAME} reads the worker's secret NAME; PLAYBOOK_* names are the engine's)."`
	Workdir string  `json:"workdir" doc:"The directory the command runs in."`
}

func (*ShellTool) Kind() string { return "shell" }
func (*ShellTool) runsProcess() {}
func (*ShellTool) resultShape() types.Map {
	return types.Map{"exit_code": types.Int, "stdout": types.String, "stderr": types.String, "json": types.Any}
}
func (*ShellTool) check(fields map[string]any) (string, string) {
	switch {
	case fields["command"] == nil:
		return "", "shell tool needs a command"
	case expr.IsTemplate(fields["command"].(string)):
		// The contract: templated values reach processes as environment
		// variables, never spliced into shell text (that is an injection).
		return "command", `shell tool: command holds a template; pass the value through env (env: {X: "{{ ... }}"}) and use "$X" in the command`
	}
	return "", ""
}

// HTTPTool sends one request; a body that is not a string goes as JSON.
type HTTPTool struct {
	Method  string      `json:"method" doc:"The HTTP method (default GET)."`
	URL     string      `json:"url" required:"true" doc:"The URL (templates allowed)."`
	Headers PlainValues `json:"headers" doc:"Request headers (plain values; {secret: NAME} reads the worker's secret NAME)."`
	Body    any         `json:"body" doc:"The request body; not a string: sent as JSON."`
	// ExpectStatus lists the statuses that succeed; nil: any 2xx.
	ExpectStatus StatusCodes `json:"expect_status" doc:"The status code, or list of them, that succeed (default any 2xx)."`
}

func (*HTTPTool) Kind() string { return "http" }
func (*HTTPTool) resultShape() types.Map {
	return types.Map{"status_code": types.Int, "headers": types.Map{types.Extra: types.Any}, "body": types.String, "json": types.Any}
}
func (*HTTPTool) check(fields map[string]any) (string, string) {
	if fields["url"] == nil {
		return "", "http tool needs a url"
	}
	return "", ""
}

// strictCheck refuses, at submission only (builds before it accepted
// them, and failed every attempt), a method that is not one word, a url
// without a template that is not an absolute http or https URL with a
// host, and a header name that is not a token.
func (*HTTPTool) strictCheck(fields map[string]any) (string, string) {
	if m, _ := fields["method"].(string); m != "" && !expr.IsTemplate(m) && !httpToken.MatchString(m) {
		return "method", fmt.Sprintf("http tool: method %q is not an HTTP method (one word, such as GET, POST or PUT)", m)
	}
	if raw, _ := fields["url"].(string); raw != "" && !expr.IsTemplate(raw) {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "url", fmt.Sprintf("http tool: url %q is not an absolute http or https URL with a host (such as https://api.example.com/orders)", raw)
		}
	}
	if headers, ok := fields["headers"].(map[string]any); ok {
		for _, name := range slices.Sorted(maps.Keys(headers)) {
			if !httpToken.MatchString(name) {
				return "headers", fmt.Sprintf("http tool: header name %q is not a valid one (one word of letters, digits and -, such as X-Api-Key)", name)
			}
		}
	}
	return "", ""
}

// httpToken is what an HTTP method may be: a token of RFC 9110.
var httpToken = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// PythonTool calls main(**args) of its code with the machine's python3.
type PythonTool struct {
	Code string `json:"code" required:"true" doc:"Python code defining main(**args); no templates: pass values through args."`
	Args Values `json:"args" doc:"The keyword arguments of main (templates allowed)."`
}

func (*PythonTool) Kind() string { return "python" }
func (*PythonTool) runsProcess() {}
func (*PythonTool) check(fields map[string]any) (string, string) {
	switch {
	case fields["code"] == nil:
		return "", "python tool needs code defining main(**args)"
	case expr.IsTemplate(fields["code"].(string)):
		return "code", `python tool: code holds a template; pass the value through args (args: {x: "{{ ... }}"}) and read it in main`
	}
	return "", ""
}

// NoopTool returns its rendered result.
type NoopTool struct {
	Result any `json:"result" doc:"The step's result, rendered."`
}

func (*NoopTool) Kind() string                          { return "noop" }
func (*NoopTool) check(map[string]any) (string, string) { return "", "" }

// RunsAnActivity tells whether a tool kind's steps run as an activity,
// whose runner is in activities/: not a sub-playbook (a child workflow),
// nor a raised error, an approval or a wait (the workflow decides them).
// noop's runner serves runs from before noop-in-workflow.
func RunsAnActivity(kind string) bool {
	return kind != "playbook" && kind != FailKind && !IsPause(kind)
}

// FailKind is the tool kind that fails its step on purpose.
const FailKind = "fail"

// FailTool fails its step on purpose with the error it describes, decided
// in the workflow like a noop: the error is {type, message, details}, as
// a tool's failure would be, so that conditions route on its type.
type FailTool struct {
	Type    ErrorType `json:"type" required:"true" doc:"The error's type, which conditions match (steps.NAME.error.type): a lower-case identifier, not one of the engine's own error types."`
	Message string    `json:"message" doc:"The error's message (templates allowed)."`
	Details any       `json:"details" doc:"The error's details: any value (templates allowed)."`
}

func (*FailTool) Kind() string { return FailKind }
func (*FailTool) check(fields map[string]any) (string, string) {
	typ, _ := fields["type"].(string)
	switch {
	case fields["type"] == nil:
		return "", "fail tool needs a type: the error type that conditions match, such as empty_input"
	case !errorType.MatchString(typ):
		// A plain name: routing on it is decided when the playbook is read.
		return "type", fmt.Sprintf("fail tool: type %q must be a lower-case identifier ([a-z][a-z0-9_]*), such as empty_input", typ)
	}
	return "", ""
}

// ErrorType is a raised error's type: a lower-case identifier (errorType).
type ErrorType string

// errorType is what a raised error's type may be.
var errorType = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// PlaybookTool runs a sub-playbook as a child workflow.
type PlaybookTool struct {
	Path     string `json:"path" required:"true" doc:"The sub-playbook's file, relative to this one."`
	Workload Values `json:"workload" doc:"The sub-playbook's workload (templates allowed)."`
}

func (*PlaybookTool) Kind() string { return "playbook" }
func (*PlaybookTool) check(fields map[string]any) (string, string) {
	switch {
	case fields["path"] == nil:
		return "", "playbook tool needs the path of the sub-playbook"
	case expr.IsTemplate(fields["path"].(string)):
		return "path", "playbook tool: path must be a plain file name: sub-playbooks are frozen into the run when it is submitted"
	}
	return "", ""
}

// Values is a mapping of names to any values.
type Values map[string]any

func (Values) checkValue(v any) error {
	if _, ok := v.(map[string]any); !ok {
		return errors.New("must be a mapping of names to values")
	}
	return nil
}

// PlainValues is a mapping of names to plain values (no mapping, no list):
// environment variables, headers. A value may also be a secret's name,
// written {secret: NAME} (SecretRef).
type PlainValues map[string]any

func (PlainValues) checkValue(v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return errors.New("must be a mapping of names to values")
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch x := m[k].(type) {
		case map[string]any:
			name, isRef := SecretRef(x)
			if !isRef {
				return fmt.Errorf("%s must be a plain value, or a secret written {secret: NAME}", k)
			}
			if err := CheckSecretName(name); err != nil {
				return fmt.Errorf("%s: %v", k, err)
			}
		case []any:
			return fmt.Errorf("%s must be a plain value", k)
		}
	}
	return nil
}

// SecretRef tells whether a value is a secret's name, written
// {secret: NAME}: the worker reads NAME from its secrets directory when an
// attempt starts, so only the name is in the run's history.
func SecretRef(v any) (name string, ok bool) {
	m, isMap := v.(map[string]any)
	if !isMap || len(m) != 1 {
		return "", false
	}
	name, ok = m["secret"].(string)
	return name, ok
}

// secretName is what a secret's name may hold: it names a file in the
// worker's secrets directory, so no path separator and no leading dot.
var secretName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// CheckSecretName checks a secret's name.
func CheckSecretName(name string) error {
	if !secretName.MatchString(name) {
		return fmt.Errorf("secret %q: a secret's name is 1 to 128 letters, digits, '.', '_' or '-', beginning with a letter or digit (it names a file in the worker's secrets directory; no templates)", name)
	}
	return nil
}

// engineEnvPrefix begins the names of the variables the engine sets for
// every attempt (PLAYBOOK_RUN_ID, PLAYBOOK_STEP...).
const engineEnvPrefix = "PLAYBOOK_"

// EngineEnv says whether a variable's name is the engine's: a step's own
// env cannot set it.
func EngineEnv(name string) bool { return strings.HasPrefix(name, engineEnvPrefix) }

// EnvVars are a step's environment variables: plain values under names a
// process environment can hold. The engine sets the PLAYBOOK_* variables
// of every attempt, so a step cannot name one.
type EnvVars map[string]any

func (EnvVars) checkValue(v any) error {
	if err := (PlainValues{}).checkValue(v); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(v.(map[string]any))) {
		switch {
		case k == "":
			return errors.New("a variable needs a name")
		case strings.ContainsAny(k, "=\x00"):
			return fmt.Errorf("%q: a variable's name cannot hold '=' or a NUL byte", k)
		case EngineEnv(k):
			return fmt.Errorf("%s: PLAYBOOK_* variables are the engine's (PLAYBOOK_RUN_ID, PLAYBOOK_STEP, PLAYBOOK_ATTEMPT...); give the step's own another name", k)
		}
	}
	return nil
}

// StatusCodes are HTTP statuses, written as one code or a list of them.
type StatusCodes []int

func (StatusCodes) checkValue(v any) error {
	codes, ok := v.([]any)
	if !ok {
		codes = []any{v}
	}
	for _, c := range codes {
		if s, ok := c.(string); ok {
			return fmt.Errorf("must be an HTTP status code or a list of them, not the string %q: write the number, unquoted", s)
		}
		if n, ok := c.(int); !ok || n < 100 || n > 599 {
			return fmt.Errorf("must be an HTTP status code or a list of them, not %v", c)
		}
	}
	return nil
}

// UnmarshalJSON reads one code or a list of codes.
func (s *StatusCodes) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = nil
		return nil
	}
	var one int
	if json.Unmarshal(b, &one) == nil {
		*s = StatusCodes{one}
		return nil
	}
	return json.Unmarshal(b, (*[]int)(s))
}

// Has tells whether code is one of the statuses; no statuses: any 2xx.
func (s StatusCodes) Has(code int) bool {
	if s == nil {
		return code >= 200 && code < 300
	}
	for _, c := range s {
		if c == code {
			return true
		}
	}
	return false
}

// valueChecker is a field type that checks a value as the file wrote it.
type valueChecker interface{ checkValue(v any) error }

// toolField is one field of a tool kind: its key and how its value is checked.
type toolField struct {
	key   string
	check func(v any) error
}

// toolKind is a tool kind's type, with its fields read once.
type toolKind struct {
	spec   ToolSpec
	fields []toolField
}

func kindsByName(specs ...ToolSpec) map[string]toolKind {
	kinds := map[string]toolKind{}
	for _, toolSpec := range specs {
		k := toolKind{spec: toolSpec}
		t := reflect.TypeOf(toolSpec).Elem()
		for i := range t.NumField() {
			f := t.Field(i)
			k.fields = append(k.fields, toolField{key: strings.Split(f.Tag.Get("json"), ",")[0], check: fieldCheck(f.Type)})
		}
		kinds[toolSpec.Kind()] = k
	}
	return kinds
}

// fieldCheck is the shape check of a field's type: strings must be
// strings; Values, PlainValues and StatusCodes check themselves; any is any.
func fieldCheck(t reflect.Type) func(v any) error {
	if c, ok := reflect.Zero(t).Interface().(valueChecker); ok {
		return c.checkValue
	}
	if t.Kind() == reflect.String {
		return func(v any) error {
			if _, ok := v.(string); !ok {
				return errors.New("must be a string")
			}
			return nil
		}
	}
	return func(any) error { return nil }
}

// DecodeTool decodes a tool's fields, as rendered for an activity, into
// its kind's type.
func DecodeTool(fields map[string]any, toolSpec ToolSpec) error {
	b, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, toolSpec)
}

// ToolKinds are the names of the tool kinds, sorted.
func ToolKinds() []string { return slices.Sorted(maps.Keys(toolKinds)) }

// ResultShape is the shape of a tool kind's result, nil when the kind does
// not know it.
func ResultShape(kind string) types.Map {
	if shaped, ok := toolKinds[kind].spec.(resultShaper); ok {
		return shaped.resultShape()
	}
	return nil
}

// RunsProcess tells whether a tool kind runs a process, which has an exit code.
func RunsProcess(kind string) bool {
	_, ok := toolKinds[kind].spec.(processTool)
	return ok
}
