package expr

import (
	"errors"
	"fmt"
	"regexp"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"
	"github.com/expr-lang/expr/vm/runtime"
)

// Comparisons with null are false: `status_code >= 500` when a request
// got no answer (status_code is null) is false, not an engine error, and
// so are <, <= and >; == and != already compare with null. An expression
// is compiled as written (Expr.program) and, the first time an evaluation
// meets a null in an ordering, once more with each ordering turned into a
// call of nullSafeCompare (Expr.nullSafe). Runs from before this rule
// keep their error (engine.WithNullSafeComparisons).

// nilOrdering is the error expr-lang gives for an ordering with null.
var nilOrdering = regexp.MustCompile(`invalid operation: (<nil> [<>]=? \S+|\S+ [<>]=? <nil>)`)

// IsNullComparison says whether err is an ordering that met a null.
func IsNullComparison(err error) bool {
	return err != nil && nilOrdering.MatchString(err.Error())
}

// nullSafe holds an expression's second program, compiled on first use.
type nullSafe struct {
	once    sync.Once
	program *vm.Program
	err     error
}

// orderings turns every <, <=, > and >= into nullSafeCompare(left, right, op).
type orderings struct{}

func (orderings) Visit(node *ast.Node) {
	b, ok := (*node).(*ast.BinaryNode)
	if !ok {
		return
	}
	switch b.Operator {
	case "<", "<=", ">", ">=":
		call := &ast.CallNode{Callee: &ast.IdentifierNode{Value: nullSafeCompareName},
			Arguments: []ast.Node{b.Left, b.Right, &ast.StringNode{Value: b.Operator}}}
		ast.Patch(node, call)
	}
}

const nullSafeCompareName = "nullSafeCompare"

// nullSafeCompare is an ordering that is false when either side is null,
// and otherwise what the operator says (an error for values it cannot
// order, as the operator gives).
var nullSafeCompare = expr.Function(nullSafeCompareName, func(params ...any) (out any, err error) {
	a, b, op := params[0], params[1], params[2].(string)
	if a == nil || b == nil {
		return false, nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("invalid operation: %v", r)
		}
	}()
	switch op {
	case "<":
		return runtime.Less(a, b), nil
	case "<=":
		return runtime.LessOrEqual(a, b), nil
	case ">":
		return runtime.More(a, b), nil
	case ">=":
		return runtime.MoreOrEqual(a, b), nil
	}
	return nil, errors.New("unknown ordering " + op)
}, new(func(any, any, string) bool))

// EvalNullSafe runs the expression with comparisons with null false.
func (e *Expr) EvalNullSafe(env map[string]any) (any, error) {
	if e.broken != nil || e.recompile == nil {
		return e.Eval(env)
	}
	e.nullSafe.once.Do(func() { e.nullSafe.program, e.nullSafe.err = e.recompile() })
	if e.nullSafe.err != nil {
		return nil, fmt.Errorf("%q: %s", e.Source, FirstLine(e.nullSafe.err.Error()))
	}
	return e.run(e.nullSafe.program, env)
}

// EvalBoolNullSafe is EvalBool with comparisons with null false.
func (e *Expr) EvalBoolNullSafe(env map[string]any) (bool, error) {
	out, err := e.EvalNullSafe(env)
	if err != nil {
		return false, err
	}
	return e.asBool(out)
}
