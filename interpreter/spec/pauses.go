package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"playbook/interpreter/spec/expr"

	"github.com/expr-lang/expr/types"
	"go.yaml.in/yaml/v3"
)

// The two tool kinds below run nothing: the workflow decides them with a
// durable timer (wait) or by waiting for a person's decision, sent as a
// Temporal Update (approval). No activity, no process, no worker.

// What an approval does when its timeout passes with no decision.
const (
	OnTimeoutApprove = "approve"
	OnTimeoutReject  = "reject"
	OnTimeoutFail    = "fail"
)

// ApprovalTool waits for a person to approve or reject, with typed inputs.
type ApprovalTool struct {
	Message   string   `json:"message" doc:"What the person is asked (templates allowed)."`
	Inputs    Inputs   `json:"inputs" doc:"The inputs the person may give, with their defaults: a default's type is the input's type ([] or {} takes any list or mapping); an input with no default (null) is required and takes any value."`
	Approvers Names    `json:"approvers" doc:"Who may decide: the names --by (or an Update's by) must be one of; none: anyone. A check of names, not an authentication."`
	Timeout   Duration `json:"timeout" doc:"How long the step waits for a decision (default: for ever)."`
	OnTimeout string   `json:"on_timeout" doc:"What the timeout decides: approve (with the defaults), reject, or fail (default, error type timeout)."`
}

func (*ApprovalTool) Kind() string { return "approval" }
func (*ApprovalTool) resultShape() types.Map {
	return types.Map{"decision": types.String, "inputs": types.Map{types.Extra: types.Any}, "by": types.String, "reason": types.String, "at": types.String}
}
func (*ApprovalTool) check(fields map[string]any) (string, string) {
	switch on, _ := fields["on_timeout"].(string); {
	case fields["on_timeout"] != nil && on != OnTimeoutApprove && on != OnTimeoutReject && on != OnTimeoutFail:
		return "on_timeout", fmt.Sprintf("approval tool: on_timeout must be approve, reject or fail, not %q", on)
	case fields["on_timeout"] != nil && fields["timeout"] == nil:
		return "on_timeout", "approval tool: on_timeout needs a timeout in the tool (tool: {kind: approval, timeout: 1h, on_timeout: ...}): how long the approval waits"
	}
	for _, field := range []string{"inputs", "approvers", "timeout", "on_timeout"} {
		if holdsTemplate(fields[field]) {
			return field, fmt.Sprintf("approval tool: %s holds a template; only message is rendered", field)
		}
	}
	return "", ""
}

// strictCheck refuses, at submission only (builds before it accepted
// them, and a run they started must replay), what an approval would
// accept and ignore.
func (*ApprovalTool) strictCheck(fields map[string]any) (string, string) {
	if fields["timeout"] != nil && isZeroDuration(fields["timeout"]) {
		return "timeout", "approval tool: timeout must be more than 0 (leave it out to wait for ever)"
	}
	list, ok := fields["approvers"].([]any)
	if ok && len(list) == 0 {
		return "approvers", "approval tool: approvers is empty (leave it out to let anyone decide)"
	}
	if inputs, _ := fields["inputs"].(map[string]any); fields["on_timeout"] == OnTimeoutApprove && len(RequiredInputs(inputs)) > 0 {
		return "on_timeout", fmt.Sprintf("approval tool: on_timeout: approve approves with the defaults, and input %s has none (it is required): give it a default, or on_timeout reject or fail",
			RequiredInputs(inputs)[0])
	}
	// Names are printed on operators' terminals: one line of printable
	// text, as a decision's by must be.
	for _, v := range list {
		if name := fmt.Sprint(v); strings.ContainsFunc(name, unicode.IsControl) || len(name) > 200 {
			return "approvers", fmt.Sprintf("approval tool: approver %s must be a name of at most 200 bytes without control characters", strconv.Quote(name))
		}
	}
	return "", ""
}

// RequiredInputs are the names of an approval's inputs that have no
// default (null): approving must give each a value. Sorted.
func RequiredInputs(declared map[string]any) []string {
	var names []string
	for _, k := range slices.Sorted(maps.Keys(declared)) {
		if declared[k] == nil {
			names = append(names, k)
		}
	}
	return names
}

// MissingInput is the first required input (RequiredInputs) that given
// leaves out, null or empty, "" when none is.
func MissingInput(declared, given map[string]any) string {
	for _, k := range RequiredInputs(declared) {
		if v := given[k]; v == nil || v == "" {
			return k
		}
	}
	return ""
}

// WaitTool waits for a duration, or until a time, on a durable timer.
type WaitTool struct {
	Duration Duration `json:"duration" doc:"How long to wait (30s, 10m, 1h30m); give this or until."`
	Until    string   `json:"until" doc:"The time to wait until, RFC 3339 (templates allowed, e.g. from run.logical_time); a time past completes at once."`
}

func (*WaitTool) Kind() string { return "wait" }
func (*WaitTool) resultShape() types.Map {
	return types.Map{"waited": types.String, "until": types.String}
}
func (*WaitTool) check(fields map[string]any) (string, string) {
	switch {
	case fields["duration"] == nil && fields["until"] == nil:
		return "", "wait tool needs a duration or an until"
	case fields["duration"] != nil && fields["until"] != nil:
		return "until", "wait tool: give a duration or an until, not both"
	}
	if u, ok := fields["until"].(string); ok && !expr.IsTemplate(u) {
		if _, err := time.Parse(time.RFC3339, u); err != nil {
			return "until", fmt.Sprintf("wait tool: until %q is not an RFC 3339 time (e.g. 2026-01-02T06:00:00Z)", u)
		}
	}
	return "", ""
}

// isZeroDuration tells whether a tool's duration, as written, is 0.
func isZeroDuration(v any) bool {
	d, err := toolDuration(v)
	return err == nil && d == 0
}

// strictCheck refuses, at submission only, a wait of nothing, and a wait
// until a time no timer reaches.
func (*WaitTool) strictCheck(fields map[string]any) (string, string) {
	if fields["duration"] != nil && isZeroDuration(fields["duration"]) {
		return "duration", "wait tool: duration must be more than 0"
	}
	if u, ok := fields["until"].(string); ok && !expr.IsTemplate(u) {
		if t, err := time.Parse(time.RFC3339, u); err == nil && t.After(LastTimerTime) {
			return "until", UntilUnreachable(u)
		}
	}
	return "", ""
}

// LastTimerTime is the last time a wait can wait until: a timer's length
// is counted in nanoseconds, which from any time since 1970 overflow past
// it (the wait would be cut to 292 years and said to be so).
var LastTimerTime = time.Unix(0, math.MaxInt64).UTC()

// UntilUnreachable says that a wait's until is past LastTimerTime.
func UntilUnreachable(until string) string {
	return fmt.Sprintf("wait tool: until %q is past the last time a timer can reach (%s)", until, LastTimerTime.Truncate(time.Second).Format(time.RFC3339))
}

// holdsTemplate tells whether a value holds a template anywhere.
func holdsTemplate(v any) bool {
	switch t := v.(type) {
	case string:
		return expr.IsTemplate(t)
	case []any:
		return slices.ContainsFunc(t, holdsTemplate)
	case map[string]any:
		for _, x := range t {
			if holdsTemplate(x) {
				return true
			}
		}
	}
	return false
}

// IsPause tells whether a tool kind is decided by the workflow waiting:
// for a person (approval) or for a time (wait).
// A wait_event step waits for an event sent to the run.
func IsPause(kind string) bool { return kind == "approval" || kind == "wait" || kind == WaitEventKind }

// refusePauseKeys refuses the step keys a wait or an approval step has no
// use for: they bound or repeat an activity's attempts, and these steps
// run none. Both kinds are newer than every recorded run, so these are
// errors of Parse, not refusals at submission.
func (d *decoder) refusePauseKeys(s *Step, n *yaml.Node, x stepKeysState) error {
	if s.Tool == nil || !IsPause(s.Tool.Kind) {
		return nil
	}
	kind, aKind := s.Tool.Kind, "a wait"
	switch kind {
	case "approval":
		aKind = "an approval"
	case WaitEventKind:
		aKind = "a wait_event"
	}
	switch {
	case x.timeoutNode != nil && kind == "approval":
		return d.errf(x.timeoutNode, "timeout bounds an activity's attempt, and an approval runs none: write the approval's timeout in its tool (tool: {kind: approval, timeout: 2h, on_timeout: fail})")
	case x.timeoutNode != nil && kind == WaitEventKind:
		return d.errf(x.timeoutNode, "timeout bounds an activity's attempt, and a wait_event runs none: write its timeout in its tool (tool: {kind: wait_event, event: NAME, timeout: 2h, on_timeout: fail})")
	case x.timeoutNode != nil:
		return d.errf(x.timeoutNode, "timeout does not apply to a wait step: it runs no attempt to bound")
	case x.heartbeatNode != nil:
		return d.errf(x.heartbeatNode, "heartbeat_timeout does not apply to %s step: it runs no activity", aKind)
	case s.Retry != nil:
		return d.errf(n, "retry does not apply to %s step: it runs no attempt to repeat", aKind)
	case s.failureHandlerRef != "":
		return d.errf(n, "failure_handler does not apply to %s step: it runs no process", aKind)
	case x.lostNode != nil || x.onLostNode != nil:
		return d.errf(n, "lost_attempts and on_lost do not apply to %s step: it runs no activity a worker could lose", aKind)
	case s.Loop != nil:
		return d.errf(n, "%s step cannot run in a loop: list the steps one by one", aKind)
	case s.Name == EndStep:
		return d.errf(n, "end's tool runs once the run is decided: put %s step before end", aKind)
	}
	if kind == WaitEventKind && (x.onCancelNode != nil || x.alwaysNode != nil) {
		return d.errf(n, "a wait_event cannot be a cleanup step (on_cancel, always): after a cancel or the deadline no event reaches it, and nothing would end its wait")
	}
	if kind == "approval" && (x.onCancelNode != nil || x.alwaysNode != nil) {
		// A cleanup step runs after a cancel, when nobody is asked any
		// more, and nothing would end its wait. Refused at submission
		// only: builds before this accepted it.
		node := x.onCancelNode
		if node == nil {
			node = x.alwaysNode
		}
		d.refuse(node, "an approval cannot be a cleanup step (on_cancel, always): after a cancel or the deadline nobody is asked, and nothing would end its wait")
	}
	return nil
}

// Inputs are an approval's inputs, declared like workload keys: a default
// gives each its type.
type Inputs map[string]any

func (Inputs) checkValue(v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return errors.New("must be a mapping of input names to their defaults")
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !namePattern.MatchString(k) {
			return fmt.Errorf("input name %q must match [a-z0-9][a-z0-9_-]*", k)
		}
	}
	return nil
}

func (Inputs) schema() jsonSchema {
	return jsonSchema{"type": "object", "propertyNames": jsonSchema{"pattern": namePattern.String()}}
}

// Names is a list of free-form names.
type Names []string

func (Names) checkValue(v any) error {
	list, ok := v.([]any)
	if !ok {
		return errors.New("must be a list of names")
	}
	for _, x := range list {
		if s, ok := x.(string); !ok || strings.TrimSpace(s) == "" {
			return fmt.Errorf("must be a list of names, not %v", x)
		}
	}
	return nil
}

func (Names) schema() jsonSchema {
	return jsonSchema{"type": "array", "items": jsonSchema{"type": "string", "minLength": 1}}
}

// Duration is a tool's duration: text (30s, 10m, 1h30m) or a number of
// seconds, as a step's timeout is written.
type Duration time.Duration

func (Duration) checkValue(v any) error {
	_, err := toolDuration(v)
	return err
}

func (Duration) schema() jsonSchema {
	return jsonSchema{"anyOf": []jsonSchema{{"type": "string"}, {"type": "number", "minimum": 0}}}
}

// UnmarshalJSON reads the text or the number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	t, err := toolDuration(v)
	*d = Duration(t)
	return err
}

func toolDuration(v any) (time.Duration, error) {
	bad := fmt.Errorf("bad duration %s (write e.g. 30s, 10m, 1h30m)", expr.Text(v))
	switch t := v.(type) {
	case nil:
		return 0, nil
	case string:
		d, err := time.ParseDuration(t)
		if err != nil || d < 0 {
			return 0, bad
		}
		return d, nil
	case int:
		return toolDuration(float64(t))
	case float64:
		if t < 0 || t >= maxSeconds || math.IsNaN(t) {
			return 0, bad
		}
		return time.Duration(t * float64(time.Second)), nil
	}
	return 0, bad
}

// The types of approval inputs, as InputType names them.
const (
	InputAny     = "any"
	InputBool    = "bool"
	InputInt     = "int"
	InputFloat   = "float"
	InputString  = "string"
	InputList    = "list"
	InputMapping = "mapping"
)

// InputType is the type an input's default gives it: null, [] and {}
// defaults take any value.
func InputType(def any) string {
	switch d := def.(type) {
	case bool:
		return InputBool
	case int:
		return InputInt
	case float64:
		return InputFloat
	case string:
		return InputString
	case []any:
		if len(d) > 0 {
			return InputList
		}
	case map[string]any:
		if len(d) > 0 {
			return InputMapping
		}
	}
	return InputAny
}

// ConvertInput converts a value given for an approval's input to the type
// of its default, as a decision's JSON carries it (a whole number may come
// as 3.0). The error names the input and what it wants.
func ConvertInput(name string, def, v any) (any, error) {
	return ConvertInputAs(name, InputType(def), def, v)
}

// ConvertInputAs is ConvertInput for an input of type typ (InputType),
// whose default def is shown in the error.
func ConvertInputAs(name, typ string, def, v any) (any, error) {
	bad := func(want string) error {
		return fmt.Errorf("input %s must be %s (its default is %s), not %s", name, want, describeValue(def), describeValue(v))
	}
	switch typ {
	case InputBool:
		if _, ok := v.(bool); ok {
			return v, nil
		}
		return nil, bad("true or false")
	case InputInt:
		switch n := v.(type) {
		case int:
			return n, nil
		case float64:
			if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
				return int(n), nil
			}
		}
		return nil, bad("a whole number")
	case InputFloat:
		switch n := v.(type) {
		case float64:
			return n, nil
		case int:
			return float64(n), nil
		}
		return nil, bad("a number")
	case InputString:
		if _, ok := v.(string); ok {
			return v, nil
		}
		return nil, bad("a string")
	case InputList:
		if _, ok := v.([]any); ok {
			return v, nil
		}
		return nil, bad("a list")
	case InputMapping:
		if _, ok := v.(map[string]any); ok {
			return v, nil
		}
		return nil, bad("a mapping")
	}
	return v, nil
}

// ConvertInputs checks the inputs given to an approval against the
// declared ones (their defaults, and their types when given, else the
// defaults' types) and merges them over the defaults.
func ConvertInputs(declared map[string]any, types map[string]string, given map[string]any) (map[string]any, error) {
	out := maps.Clone(declared)
	if out == nil {
		out = map[string]any{}
	}
	for _, k := range slices.Sorted(maps.Keys(given)) {
		def, ok := declared[k]
		if !ok {
			names := "this approval declares no inputs"
			if len(declared) > 0 {
				names = "declared: " + strings.Join(slices.Sorted(maps.Keys(declared)), ", ")
			}
			return nil, fmt.Errorf("input %q is not declared (%s)", k, names)
		}
		typ, ok := types[k]
		if !ok {
			typ = InputType(def)
		}
		v, err := ConvertInputAs(k, typ, def, given[k])
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// describeValue says what a value is, for an error.
func describeValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return expr.Text(v)
}

// Approval is an approval tool's fields as the file wrote them (inputs'
// defaults keep their YAML types: 3 is an int).
type Approval struct {
	Inputs    map[string]any
	Approvers []string
	Timeout   time.Duration
	OnTimeout string
}

// Approval reads an approval tool's fields.
func (t *Tool) Approval() Approval {
	a := Approval{OnTimeout: OnTimeoutFail}
	a.Inputs, _ = t.Spec["inputs"].(map[string]any)
	if list, ok := t.Spec["approvers"].([]any); ok {
		for _, v := range list {
			a.Approvers = append(a.Approvers, fmt.Sprint(v))
		}
	}
	a.Timeout, _ = toolDuration(t.Spec["timeout"])
	if on, ok := t.Spec["on_timeout"].(string); ok {
		a.OnTimeout = on
	}
	return a
}

// WaitDuration is a wait tool's duration, 0 when it waits until a time.
func (t *Tool) WaitDuration() time.Duration {
	d, _ := toolDuration(t.Spec["duration"])
	return d
}
