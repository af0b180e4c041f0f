package contract

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// BuiltinErrorTypes lists every error type errorkinds.go declares: a type
// added there without it could be raised by a fail step, and a condition
// matching it could no longer tell the two apart.
func TestBuiltinErrorTypesListEveryErrorType(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "errorkinds.go", nil, 0)
	require.NoError(t, err)
	var declared []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			for _, v := range spec.(*ast.ValueSpec).Values {
				s, err := strconv.Unquote(v.(*ast.BasicLit).Value)
				require.NoError(t, err)
				declared = append(declared, s)
			}
		}
	}
	require.Greater(t, len(declared), 10)
	require.Equal(t, slices.Sorted(slices.Values(declared)), slices.Sorted(slices.Values(BuiltinErrorTypes)))
}
