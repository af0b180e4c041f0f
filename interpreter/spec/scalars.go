package spec

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"playbook/interpreter/spec/expr"

	"go.yaml.in/yaml/v3"
)

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

// expression reads an expression in scope: a string, compiled at once so
// that a bad one is reported at its line.
func (d *decoder) expression(n *yaml.Node, what string, scope expr.Scope, asBool bool, out **expr.Expr) error {
	var src string
	if err := d.str(n, what, &src); err != nil {
		return err
	}
	e, err := expr.CompileExprAt(src, n.Line, scope, asBool)
	if err != nil {
		return d.errf(n, "%s: %v", what, err)
	}
	*out = e
	return nil
}

func (d *decoder) boolean(n *yaml.Node, what string, out *bool) error {
	if n.Kind != yaml.ScalarNode || n.Decode(out) != nil {
		hint := ""
		if v := strings.ToLower(n.Value); n.Kind == yaml.ScalarNode && (v == "true" || v == "false") {
			hint = ": write true or false, unquoted"
		}
		return d.errf(n, "%s must be true or false, not %s%s", what, asWritten(n), hint)
	}
	if n.Tag != "!!bool" {
		// yes, no, on, off, y, n, or quoted: read as YAML 1.1 read them,
		// and accepted before; a submission writes true or false.
		d.refuse(n, "%s must be true or false, not %s: write true or false, unquoted", what, asWritten(n))
	}
	return nil
}

func (d *decoder) integer(n *yaml.Node, what string, out *int) error {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(out) != nil {
		return d.errf(n, "%s must be a whole number, not %q", what, n.Value)
	}
	return nil
}

// maxSeconds is the longest duration, in seconds.
var maxSeconds = float64(math.MaxInt64 / int64(time.Second))

// duration accepts Go durations ("1m30s", "500ms") or a number of seconds.
func (d *decoder) duration(n *yaml.Node, what string, out *time.Duration) error {
	if n.Kind == yaml.ScalarNode {
		if n.Tag == "!!int" || n.Tag == "!!float" {
			// A number of seconds; past about 292 years a duration overflows.
			if secs, err := strconv.ParseFloat(n.Value, 64); err == nil && secs >= 0 && secs < maxSeconds {
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
		if d.aliasBomb != nil && strings.Contains(err.Error(), "excessive aliasing") {
			// One problem, one line: the refusal becomes the error.
			d.submitErrs = slices.DeleteFunc(d.submitErrs, func(e error) bool { return e == d.aliasBomb })
			return nil, d.aliasBomb
		}
		return nil, d.errf(n, "%s: %v", what, err)
	}
	if at, number, path := nonFinite(n, what); at != nil {
		d.refuse(at, "%s must be a finite number, not %s", path, number)
	}
	if at, text, path := unquotedTime(n, what); at != nil {
		d.refuse(at, "%s: YAML reads an unquoted %s as a timestamp, which steps would see as %s: quote it (%q) for the text", path, text, timestampText(at), text)
	}
	if tag, at := ForeignTag(n); at != nil {
		d.refuse(at, "%s: the YAML tag %s is not read by playbooks: write the value plainly", what, tag)
	}
	return Normalize(v), nil
}

// nonFinite finds inside a value the first number JSON cannot carry
// (.nan, .inf, -.inf): the node to report it at (an alias that names it is
// where it is used), the number as written, and the path to it from what.
// Such a number could never reach a step or a run's input, all of which
// travel as JSON: the workflow would fail to send it on every attempt. It
// is refused at submission; Parse keeps accepting it for the runs started
// before.
func nonFinite(n *yaml.Node, what string) (at *yaml.Node, number, path string) {
	return findScalar(n, what, func(n *yaml.Node) bool {
		var f float64
		return n.ShortTag() == "!!float" && n.Decode(&f) == nil && (math.IsNaN(f) || math.IsInf(f, 0))
	})
}

// unquotedTime finds inside a value the first date or time written
// plainly (2026-01-02, 2026-01-02T06:00:00Z), as nonFinite finds a
// number: YAML reads it as a timestamp, which reaches steps as
// 2026-01-02T00:00:00Z and equals no text, not as the text written. It is
// refused at submission (quoted, it is that text); Parse keeps reading it
// as before for the runs started before.
func unquotedTime(n *yaml.Node, what string) (at *yaml.Node, text, path string) {
	return findScalar(n, what, PlainTimestamp)
}

// PlainTimestamp tells whether n is a date or time written plainly (not
// quoted, not tagged), which YAML reads as a timestamp.
func PlainTimestamp(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Style&yaml.TaggedStyle == 0 && n.ShortTag() == "!!timestamp"
}

// findScalar finds inside a value the first scalar that match holds of:
// the node to report it at (an alias that names it is where it is used),
// the scalar as written, and the path to it from what.
func findScalar(n *yaml.Node, what string, match func(*yaml.Node) bool) (at *yaml.Node, text, path string) {
	switch n.Kind {
	case yaml.ScalarNode:
		if match(n) {
			return n, n.Value, what
		}
	case yaml.AliasNode:
		if found, text, path := findScalar(n.Alias, what, match); found != nil {
			return n, text, path
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			path := what + "." + n.Content[i].Value
			if n.Content[i].ShortTag() == "!!merge" {
				path = what
			}
			if at, text, path := findScalar(n.Content[i+1], path, match); at != nil {
				return at, text, path
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if at, text, path := findScalar(c, fmt.Sprintf("%s[%d]", what, i), match); at != nil {
				return at, text, path
			}
		}
	}
	return nil, "", ""
}

// Normalize turns YAML's map[string]interface{} trees into map[string]any
// with string keys, as JSON would have them.
func Normalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		//workflowcheck:ignore order-free: normalizes each value in place
		for k, e := range t {
			t[k] = Normalize(e)
		}
		return t
	case map[any]any:
		// Keys that read alike (1 and "1") are refused at submission; for
		// runs that have them, the same one wins every time.
		m := make(map[string]any, len(t))
		for _, k := range sortedAnyKeys(t) {
			m[fmt.Sprint(k)] = Normalize(t[k])
		}
		return m
	case []any:
		for i, e := range t {
			t[i] = Normalize(e)
		}
		return t
	}
	return v
}

// sortedAnyKeys orders a YAML map's keys by their text, then their type, so
// normalizing a map is the same every time.
func sortedAnyKeys(m map[any]any) []any {
	keys := make([]any, 0, len(m))
	//workflowcheck:ignore order-free: the keys are sorted below
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := fmt.Sprint(keys[i]), fmt.Sprint(keys[j])
		if a != b {
			return a < b
		}
		return fmt.Sprintf("%T", keys[i]) < fmt.Sprintf("%T", keys[j])
	})
	return keys
}

// coreTags are the YAML tags a value may be written with: those of the
// values a playbook holds (text, numbers, booleans, null, lists, mappings),
// and a merge key's and a timestamp's, which the decoder resolves.
var coreTags = map[string]bool{"!!str": true, "!!int": true, "!!float": true, "!!bool": true, "!!null": true,
	"!!seq": true, "!!map": true, "!!merge": true, "!!timestamp": true}

// ForeignTag finds, inside a value, the first node written with a YAML tag
// other than coreTags (`!!binary`, `!!python/object:...`, `!custom`): the
// decoder would turn it into something the text does not say, or a value
// no step can use. It returns the tag and its node, or "" and nil.
func ForeignTag(n *yaml.Node) (string, *yaml.Node) {
	if n == nil {
		return "", nil
	}
	if n.Style&yaml.TaggedStyle != 0 && !coreTags[n.ShortTag()] {
		return n.Tag, n
	}
	if n.Kind == yaml.AliasNode {
		return "", nil // told where its anchor is
	}
	for _, c := range n.Content {
		if tag, at := ForeignTag(c); at != nil {
			return tag, at
		}
	}
	return "", nil
}

// timestampText is how a step sees the timestamp the decoder makes of n.
func timestampText(n *yaml.Node) string {
	var t time.Time
	if n.Decode(&t) != nil {
		return "a time"
	}
	return t.Format(time.RFC3339Nano)
}
