package expr

import (
	"fmt"
	"reflect"
	"sort"

	"github.com/expr-lang/expr"
)

// The expr builtins that walk a map (keys, values, toPairs) return Go's map
// order, which changes from one evaluation to the next: a replay would see
// a different list than the run did. The workflow evaluates expressions, so
// these names are replaced by versions that return the map's entries sorted
// by key. Every other builtin is deterministic (toJSON and string() sort
// maps; fromPairs and groupBy build maps; the rest take lists).
var sortedMapBuiltins = []expr.Option{
	sortedMapBuiltin("keys", func(k, _ reflect.Value) any { return k.Interface() }),
	sortedMapBuiltin("values", func(_, v reflect.Value) any { return v.Interface() }),
	sortedMapBuiltin("toPairs", func(k, v reflect.Value) any { return []any{k.Interface(), v.Interface()} }),
}

// sortedMapBuiltin is a builtin that lists entry(key, value) for each entry
// of its one map argument, in key order.
func sortedMapBuiltin(name string, entry func(k, v reflect.Value) any) expr.Option {
	return expr.Function(name, func(args ...any) (any, error) {
		m, keys, err := sortedEntries(name, args)
		if err != nil {
			return nil, err
		}
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = entry(k, m.MapIndex(k))
		}
		return out, nil
	}, new(func(any) []any))
}

// sortedEntries reads a builtin's one map argument and its keys in order:
// by their text, then by their type's name for keys of equal text.
func sortedEntries(name string, args []any) (reflect.Value, []reflect.Value, error) {
	if len(args) != 1 {
		return reflect.Value{}, nil, fmt.Errorf("%s takes one map (got %d arguments)", name, len(args))
	}
	m := reflect.ValueOf(args[0])
	if m.Kind() != reflect.Map {
		return reflect.Value{}, nil, fmt.Errorf("%s takes a map, not %T", name, args[0])
	}
	keys := m.MapKeys()
	sort.Slice(keys, func(i, j int) bool {
		a, b := fmt.Sprint(keys[i].Interface()), fmt.Sprint(keys[j].Interface())
		if a != b {
			return a < b
		}
		return keys[i].Type().String() < keys[j].Type().String()
	})
	return m, keys, nil
}
