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

// A null does not make a condition an engine error:
//   - comparisons with null are false: `status_code >= 500` when a request
//     got no answer (status_code is null) is false, and so are <, <= and >;
//     == and != already compare with null;
//   - a field or an index of null is null: `steps.x.error.type` when x did
//     not fail (its error is null) is null, as `steps.x.error?.type` is.
//
// An expression is compiled as written (Expr.program) and, the first time
// an evaluation meets a null where it would fail, once more with each
// ordering turned into a call of nullSafeCompare, or each member access
// into one of nullSafeFetch, or both (Expr.safer). Runs from before each
// rule keep their error (engine.WithNullSafeComparisons,
// engine.WithNullSafeMembers).

// Safety says which of the rules above an evaluation applies.
type Safety uint8

const (
	// NullOrderings: an ordering with null is false.
	NullOrderings Safety = 1 << iota
	// NullMembers: a field or an index of null is null.
	NullMembers
	// hostZones: date and timezone look zones up on the host, as
	// expr-lang's own do (zones.go), for runs from before embedded zones.
	hostZones
	// Guarded: a field, an index or the length of a value over its
	// budget (a stub, Truncated), read past the stub's own fields, is an
	// error that says the value was cut (stub.go); without it, it reads
	// the stub, as expr-lang does and runs from before the change
	// "truncated-reads" did (a field it has not is null, its length 4).
	// The caller asks for it when what the expression reads holds a
	// stub (HoldsStub): its program calls a function for every field,
	// index and length, which expr-lang's optimizer does not fold, so an
	// evaluation that fails under it for any other reason is made again
	// as written, and gives what it gives as written.
	Guarded
	allSafeties = NullOrderings | NullMembers
	everySafety = allSafeties | hostZones | Guarded
)

// nilMember is the error expr-lang gives for a field or index of null
// (the key may hold spaces, or be empty).
var nilMember = regexp.MustCompile(`cannot fetch .* from <nil>`)

// ReadsTruncated tells whether the expression reads a step whose result
// env holds only as a stub (over the budget): a field of it is null for
// want of the value, not because the value has none, so the member rule
// does not apply and the error, which says so, stands.
func (e *Expr) ReadsTruncated(env map[string]any) bool {
	return truncatedNote(e.StepRefs, env) != ""
}

// IsNullMember says whether err is a field or an index of null.
func IsNullMember(err error) bool {
	return err != nil && nilMember.MatchString(err.Error())
}

// Needs is the rule that would have spared an evaluation its error: an
// ordering with null, a member of null; 0 for any other error.
func Needs(err error) Safety {
	switch {
	case IsNullComparison(err):
		return NullOrderings
	case IsNullMember(err):
		return NullMembers
	}
	return 0
}

// nilOrdering is the error expr-lang gives for an ordering with null.
var nilOrdering = regexp.MustCompile(`invalid operation: (<nil> [<>]=? \S+|\S+ [<>]=? <nil>)`)

// IsNullComparison says whether err is an ordering that met a null.
func IsNullComparison(err error) bool {
	return err != nil && nilOrdering.MatchString(err.Error())
}

// nullSafe holds a program of an expression under some Safety, compiled
// on first use.
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

// members turns every field or index access (but a method's) into a call
// of fetch(node, property), one of the fetches below; one written ?. into
// a call of optional, or is left as it is when optional is "".
type members struct{ fetch, optional string }

func (m members) Visit(node *ast.Node) {
	n, ok := (*node).(*ast.MemberNode)
	if !ok || n.Method || (n.Optional && m.optional == "") {
		return
	}
	fetch := m.fetch
	if n.Optional {
		fetch = m.optional
	}
	ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: fetch}, Arguments: []ast.Node{n.Node, n.Property}})
}

const (
	nullSafeFetchName        = "nullSafeFetch"
	guardedFetchName         = "guardedFetch"
	guardedNullSafeFetchName = "guardedNullSafeFetch"
)

// fetch is a field or an index as expr-lang takes it, its panic an error;
// nullSafe: of null, null; guarded: past a stub, an error (truncated.go).
func fetch(from, key any, nullSafe, guarded bool) (out any, err error) {
	if nullSafe && from == nil {
		return nil, nil
	}
	if guarded {
		if err := pastStub(from, key); err != nil {
			return nil, err
		}
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return runtime.Fetch(from, key), nil
}

// nullSafeFetch is a field or an index that is null when what it is taken
// from is null, and otherwise what expr-lang gives.
var nullSafeFetch = expr.Function(nullSafeFetchName, func(params ...any) (any, error) {
	return fetch(params[0], params[1], true, false)
}, new(func(any, any) any))

// guardedFetch is a field or an index as expr-lang gives it, but one past a
// stub, which is an error.
var guardedFetch = expr.Function(guardedFetchName, func(params ...any) (any, error) {
	return fetch(params[0], params[1], false, true)
}, new(func(any, any) any))

// guardedNullSafeFetch is both.
var guardedNullSafeFetch = expr.Function(guardedNullSafeFetchName, func(params ...any) (any, error) {
	return fetch(params[0], params[1], true, true)
}, new(func(any, any) any))

// safetyOptions are the compile options that apply s.
func safetyOptions(s Safety) []expr.Option {
	var opts []expr.Option
	if s&NullOrderings != 0 {
		opts = append(opts, nullSafeCompare, expr.Patch(orderings{}))
	}
	guarded := s&Guarded != 0
	switch {
	case s&NullMembers != 0 && guarded:
		opts = append(opts, guardedNullSafeFetch, expr.Patch(members{guardedNullSafeFetchName, guardedNullSafeFetchName}))
	case s&NullMembers != 0:
		opts = append(opts, nullSafeFetch, expr.Patch(members{nullSafeFetchName, ""}))
	case guarded:
		// A ?. of null is null as written; past a stub, an error.
		opts = append(opts, guardedFetch, guardedNullSafeFetch, expr.Patch(members{guardedFetchName, guardedNullSafeFetchName}))
	}
	if guarded {
		opts = append(opts, guardedLen, expr.Patch(lengths{}))
	}
	return opts
}

// EvalWith runs the expression under the rules s (none: as written).
func (e *Expr) EvalWith(env map[string]any, s Safety) (any, error) {
	if e.broken != nil {
		return nil, e.broken
	}
	s &= allSafeties | Guarded
	// Asked only of an expression that reads zones: where the two ways
	// of looking them up part.
	if e.readsZones && e.zonesOnHost != nil && e.zonesOnHost() {
		s |= hostZones
	}
	if s == 0 || e.recompile == nil {
		return e.run(e.program, env)
	}
	p := &e.safer[s]
	p.once.Do(func() { p.program, p.err = e.recompile(s) })
	if p.err != nil {
		return nil, fmt.Errorf("%q: %s", e.Source, FirstLine(p.err.Error()))
	}
	out, err := e.run(p.program, env)
	if err != nil && s&Guarded != 0 && !IsTruncatedRead(err) {
		// Not a read past a stub: what the expression gives as written
		// (Guarded's program does not short-circuit as expr-lang's
		// optimizer does, find for filter()[0], any for len(filter()) > 0).
		return e.EvalWith(env, s&^Guarded)
	}
	return out, err
}

// EvalBoolWith is EvalBool under the rules s.
func (e *Expr) EvalBoolWith(env map[string]any, s Safety) (bool, error) {
	out, err := e.EvalWith(env, s)
	if err != nil {
		return false, err
	}
	return e.asBool(out)
}

// EvalBoolNullSafe is EvalBool under every rule above.
func (e *Expr) EvalBoolNullSafe(env map[string]any) (bool, error) {
	return e.EvalBoolWith(env, allSafeties)
}
