package interpreter

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// CheckOverrides checks workload overrides (`run --set`/`--input`, a
// sub-playbook step's `workload:`) against the keys the playbook declares
// and returns them converted to the declared types: an override may only
// set a declared key, with a value of the type its default has (a whole
// number read from JSON as 3.0 is an int); null, [] and {} defaults take
// any value, and keys nested under a declared mapping merge freely.
func CheckOverrides(pb *Playbook, overrides map[string]any) (map[string]any, error) {
	out, problems := convertOverrides(pb, overrides)
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s: %s", pb.File, strings.Join(problems, "; "))
	}
	return out, nil
}

// convertOverrides converts overrides to the declared types and says what
// is wrong with those it cannot take.
func convertOverrides(pb *Playbook, overrides map[string]any) (map[string]any, []string) {
	out := make(map[string]any, len(overrides))
	var problems []string
	for _, key := range sortedKeys(overrides) {
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
		out[key] = v
	}
	return out, problems
}

func declaredKeys(w map[string]any) string {
	if len(w) == 0 {
		return "the playbook's workload section declares no keys"
	}
	keys := sortedKeys(w)
	sort.Strings(keys)
	return "declared: " + strings.Join(keys, ", ")
}

// convertOverride converts v to the type of the default def.
func convertOverride(path string, def, v any) (any, error) {
	bad := func(want string) error {
		return fmt.Errorf("workload.%s must be %s (its default is %s), not %s", path, want, Text(def), describe(v))
	}
	switch d := def.(type) {
	case nil:
		return v, nil
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
			return Text(v), nil
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
		for _, k := range sortedKeys(m) {
			sub, declared := d[k]
			if !declared {
				out[k] = m[k]
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
	return v, nil
}

func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("%q", v)
	}
	return Text(v)
}
