package expr

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
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
	if _, ok := wholeNumber(m["budget"]); !ok {
		return 0, false
	}
	if _, ok := m["full_in"].(string); !ok {
		return 0, false
	}
	return wholeNumber(m["bytes"])
}

// HoldsStub tells whether v holds a stub, within depth levels of maps and
// lists (an environment's steps.NAME.result.json is 4 deep from steps).
func HoldsStub(v any, depth int) bool {
	_, stub := FindStub(v, "", depth)
	return stub != nil
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

// stubKeys are the fields a stub has: reading them is reading the stub.
var stubKeys = map[string]bool{"truncated": true, "bytes": true, "budget": true, "full_in": true}

// truncatedRead is in the error of an expression that reads
// past a stub: a field it has not, an index, its length. Before the
// change "truncated-reads" such a read gave null (a field), or read the
// stub (its length: 4): the value the expression meant was not there,
// and nothing said so.
const truncatedRead = "of a value that was cut: only its stub was kept"

// TruncatedRead is an error, saying msg, of a read past a stub other than
// an expression's (IsTruncatedRead).
func TruncatedRead(msg string) error { return truncatedReadError(msg) }

type truncatedReadError string

func (e truncatedReadError) Error() string { return string(e) }

// IsTruncatedRead tells whether err is a read past a stub: an
// expression's (expr-lang keeps only the text of a function's error), or
// one TruncatedRead made.
func IsTruncatedRead(err error) bool {
	var t truncatedReadError
	return err != nil && (errors.As(err, &t) || strings.Contains(err.Error(), truncatedRead))
}

// pastStub is the error of reading key of from when from is a stub and
// key is not one of its own fields; nil otherwise.
func pastStub(from, key any) error {
	if _, ok := TruncatedSize(from); !ok {
		return nil
	}
	if k, isName := key.(string); isName && stubKeys[k] {
		return nil
	}
	return fmt.Errorf("reads %v %s", key, truncatedRead)
}

// lengths turns every len(x) into guardedLen(x).
type lengths struct{}

func (lengths) Visit(node *ast.Node) {
	if b, ok := (*node).(*ast.BuiltinNode); ok && b.Name == "len" && len(b.Arguments) == 1 {
		ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: guardedLenName}, Arguments: b.Arguments})
	}
}

const guardedLenName = "guardedLen"

// guardedLen is len, but of a stub, which is an error: a loop's list of
// results cut to a stub is not a list of 4.
var guardedLen = expr.Function(guardedLenName, func(params ...any) (out any, err error) {
	if _, ok := TruncatedSize(params[0]); ok {
		return nil, errors.New("reads the length " + truncatedRead)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return builtin.Len(params[0]), nil
}, new(func(any) int))
