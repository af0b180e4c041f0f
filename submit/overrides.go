package submit

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"

	"go.yaml.in/yaml/v3"
)

// MaxInputFileSize bounds an `--input` file: the workload travels in the
// run's input with the playbook, within Temporal's 2 MB payload limit.
const MaxInputFileSize = 1 << 20

// SetText is a workload override as `run --set KEY=TEXT` wrote it. What it
// means depends on the key's default: a string default takes the text as it
// is (`--set version=1.10` is "1.10", not 1.1); any other reads it as YAML
// (5, true, [a, b]). A json.Number (`--input`, read with UseNumber) is
// taken the same way, as its digits.
type SetText string

// value reads the text as YAML: a number, a boolean, null, a list or a
// mapping; a date or anything YAML cannot read stays the text, and so
// does a date within a list or a mapping ([2026-01-01, 2026-01-02] is
// two texts, not two times).
func (t SetText) value() any {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(t), &n); err != nil {
		return string(t)
	}
	if len(n.Content) == 0 {
		return nil
	}
	if n.Content[0].Tag == "!!timestamp" {
		return string(t)
	}
	DatesAsText(n.Content[0])
	var v any
	if err := n.Content[0].Decode(&v); err != nil {
		return string(t)
	}
	return v
}

// plain turns what an override was written as into the value it stands
// for when no declared default says otherwise: SetText read as YAML, a
// json.Number as an int when it is one, else a float.
func plain(v any) any {
	return contract.MapLeaves(v, func(leaf any) any {
		switch t := leaf.(type) {
		case SetText:
			return t.value()
		case json.Number:
			if n, err := strconv.ParseInt(string(t), 10, 64); err == nil {
				return int(n)
			}
			f, _ := t.Float64()
			return f
		}
		return leaf
	})
}

// PlainOverrides are overrides with every SetText and json.Number read as
// plain, for where no playbook is at hand to check them against.
func PlainOverrides(overrides map[string]any) map[string]any {
	if overrides == nil {
		return nil
	}
	return plain(overrides).(map[string]any)
}

// CheckOverrides checks workload overrides (`run --set`/`--input`, a
// sub-playbook step's `workload:`) against the keys the playbook declares
// and returns them converted to the declared types: an override may only
// set a declared key, with a value of the type its default has (a whole
// number read from JSON as 3.0 is an int); null, [] and {} defaults take
// any value, and keys nested under a declared mapping merge freely.
func CheckOverrides(pb *spec.Playbook, overrides map[string]any) (map[string]any, error) {
	out, problems := convertOverrides(pb, overrides)
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s: %s", pb.File, strings.Join(problems, "; "))
	}
	return out, nil
}

// convertOverrides converts overrides to the declared types and says what
// is wrong with those it cannot take.
func convertOverrides(pb *spec.Playbook, overrides map[string]any) (map[string]any, []string) {
	out := make(map[string]any, len(overrides))
	var problems []string
	for _, key := range slices.Sorted(maps.Keys(overrides)) {
		def, ok := pb.Workload[key]
		if !ok {
			problems = append(problems, fmt.Sprintf("workload key %q is not declared (%s)", key, declaredKeys(pb.Workload)))
			continue
		}
		v, err := convertOverride(key, def, overrides[key])
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if path, shown, ok := nonFiniteOverride("workload."+key, overrides[key], v); ok {
			problems = append(problems, fmt.Sprintf("%s must be a finite number, not %s", path, shown))
			continue
		}
		out[key] = v
	}
	return out, problems
}

func declaredKeys(w map[string]any) string {
	if len(w) == 0 {
		return "the playbook's workload section declares no keys"
	}
	keys := slices.Sorted(maps.Keys(w))
	sort.Strings(keys)
	return "declared: " + strings.Join(keys, ", ")
}

// convertOverride converts v to the type of the default def.
func convertOverride(path string, def, v any) (any, error) {
	switch t := v.(type) {
	case SetText:
		if _, ok := def.(string); ok {
			return string(t), nil
		}
		// Any other key takes a value: text YAML cannot read would become
		// a string without a word.
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(t), &n); err != nil {
			return nil, fmt.Errorf("workload.%s: %q is not a value YAML can read (%s): quote it to give a string", path, string(t), strings.TrimPrefix(expr.FirstLine(err.Error()), "yaml: "))
		}
		// As in a file: a tag would make the value something its text
		// does not say (!!binary decodes base64).
		if tag, at := spec.ForeignTag(&n); at != nil {
			return nil, fmt.Errorf("workload.%s: %q: the YAML tag %s is not read by playbooks: write the value plainly", path, string(t), tag)
		}
	case json.Number:
		switch def.(type) {
		case string:
			return string(t), nil
		case int: // exactly, however many digits; 3.0 is read below
			if n, err := strconv.ParseInt(string(t), 10, 64); err == nil {
				return int(n), nil
			}
		}
	}
	written := v
	if _, ok := v.(map[string]any); !ok {
		v = plain(v) // a mapping's declared keys are converted one by one, below
	}
	bad := func(want string) error {
		return fmt.Errorf("workload.%s must be %s (its default is %s), not %s", path, want, expr.Text(def), describe(written))
	}
	switch d := def.(type) {
	case nil:
		return plain(v), nil
	case bool:
		if _, ok := v.(bool); ok {
			return v, nil
		}
		return nil, bad("true or false")
	case int:
		switch n := v.(type) {
		case int:
			return n, nil
		case int64:
			return int(n), nil
		case float64:
			if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
				return int(n), nil
			}
		}
		return nil, bad("a whole number")
	case float64:
		switch n := v.(type) {
		case float64:
			return n, nil
		case int:
			return float64(n), nil
		case int64:
			return float64(n), nil
		}
		return nil, bad("a number")
	case string:
		switch v.(type) {
		case string:
			return v, nil
		case bool, int, int64, float64:
			// `--set tag=2024` reads a number; the key wants its text.
			return expr.Text(v), nil
		}
		return nil, bad("a string")
	case []any:
		if _, ok := v.([]any); ok {
			return v, nil
		}
		if len(d) == 0 && v == nil {
			return v, nil
		}
		return nil, bad("a list")
	case map[string]any:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, bad("a mapping")
		}
		out := make(map[string]any, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			sub, declared := d[k]
			if !declared {
				out[k] = plain(m[k])
				continue
			}
			c, err := convertOverride(path+"."+k, sub, m[k])
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	}
	return plain(v), nil
}

func describe(v any) string {
	switch t := v.(type) {
	case json.Number:
		return string(t)
	case SetText:
		return describe(t.value())
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("%q", v)
	}
	return expr.Text(v)
}

// nonFiniteOverride finds, in an override as converted, a number JSON
// cannot carry (NaN, an infinity) that came from text: `--set k=.nan`, or
// `--input` digits beyond a float64's range (1e400). The run's input is
// JSON: it could not be sent. A value from a playbook's YAML was refused
// where it is written (decoder.value). shown is the number as written
// where the text was the number itself.
func nonFiniteOverride(path string, written, converted any) (at, shown string, found bool) {
	switch w := written.(type) {
	case map[string]any:
		c, _ := converted.(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(w)) {
			if at, shown, found = nonFiniteOverride(path+"."+k, w[k], c[k]); found {
				return at, shown, true
			}
		}
	case []any:
		c, _ := converted.([]any)
		for i := range min(len(w), len(c)) {
			if at, shown, found = nonFiniteOverride(fmt.Sprintf("%s[%d]", path, i), w[i], c[i]); found {
				return at, shown, true
			}
		}
	case SetText, json.Number:
		at, f, found := firstNonFinite(path, converted)
		switch {
		case !found:
			return "", "", false
		case at == path:
			return at, fmt.Sprint(w), true
		case math.IsNaN(f):
			return at, ".nan", true
		case f > 0:
			return at, ".inf", true
		}
		return at, "-.inf", true
	}
	return "", "", false
}

// firstNonFinite finds the first NaN or infinity in a plain value.
func firstNonFinite(path string, v any) (string, float64, bool) {
	switch t := v.(type) {
	case float64:
		return path, t, math.IsNaN(t) || math.IsInf(t, 0)
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if at, f, ok := firstNonFinite(path+"."+k, t[k]); ok {
				return at, f, true
			}
		}
	case []any:
		for i, e := range t {
			if at, f, ok := firstNonFinite(fmt.Sprintf("%s[%d]", path, i), e); ok {
				return at, f, true
			}
		}
	}
	return "", 0, false
}

// DatesAsText has every date or time written plainly under n read as the
// text written, as a playbook's own must be quoted to be.
func DatesAsText(n *yaml.Node) {
	if spec.PlainTimestamp(n) {
		n.Tag = "!!str"
	}
	for _, c := range n.Content {
		DatesAsText(c)
	}
}
