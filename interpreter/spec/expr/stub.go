package expr

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Truncated is the stub that stands for a value over its budget: bytes is
// the value's encoded size, fullIn says where the whole value is kept.
func Truncated(bytes, budget int, fullIn string) map[string]any {
	return map[string]any{"truncated": true, "bytes": bytes, "budget": budget, "full_in": fullIn}
}

// TruncatedSize tells whether v is a stub made by Truncated, and the size
// of the value it stands for. A stub that travelled through JSON has float
// numbers.
func TruncatedSize(v any) (bytes int, ok bool) {
	m, isMap := v.(map[string]any)
	if !isMap || m["truncated"] != true || len(m) != 4 {
		return 0, false
	}
	return wholeNumber(m["bytes"])
}

// wholeNumber reads a number a stub holds: an int as made, a float64 once
// it came through JSON.
func wholeNumber(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case float64:
		return int(n), true
	}
	return 0, false
}

// FormatBytes writes a size as people read it: 900 B, 12.5 KiB, 2.3 MiB.
func FormatBytes(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return trimZero(float64(n)/(1<<10)) + " KiB"
	}
	return trimZero(float64(n)/(1<<20)) + " MiB"
}

func trimZero(f float64) string {
	return strings.TrimSuffix(fmt.Sprintf("%.1f", f), ".0")
}

// truncatedNote says, after an expression's error, which of the steps it
// reads has a result that is or holds a stub: reading past a stub is the
// likely cause of the error.
func truncatedNote(refs []string, env map[string]any) string {
	steps, _ := env["steps"].(map[string]any)
	for _, name := range refs {
		entry, _ := steps[name].(map[string]any)
		if entry == nil {
			continue
		}
		if path, stub := FindStub(entry["result"], "steps."+name+".result", 6); stub != nil {
			n, _ := TruncatedSize(stub)
			budget, _ := wholeNumber(stub["budget"])
			return fmt.Sprintf(" (%s was truncated: %s, over the budget of %s; see its full_in)", path, FormatBytes(n), FormatBytes(budget))
		}
	}
	return ""
}

// findStub finds the first stub in v, a few levels deep (a sub-playbook's
// aggregate holds its steps' results), and its path from path.
func FindStub(v any, path string, depth int) (string, map[string]any) {
	if _, ok := TruncatedSize(v); ok {
		return path, v.(map[string]any)
	}
	if depth == 0 {
		return "", nil
	}
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			if p, stub := FindStub(e, fmt.Sprintf("%s[%d]", path, i), depth-1); stub != nil {
				return p, stub
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if p, stub := FindStub(x[k], path+"."+k, depth-1); stub != nil {
				return p, stub
			}
		}
	}
	return "", nil
}
