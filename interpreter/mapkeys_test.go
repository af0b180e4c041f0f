package interpreter_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// workflowcheck.yaml declares maps.Keys and maps.Values deterministic,
// because the checker cannot see that their order is sorted away. This
// test holds the interpreter to what that declaration claims: every
// maps.Keys or maps.Values call in the core and the workflow is the
// argument of slices.Sorted or slices.SortedFunc, or its line carries a
// //workflowcheck:ignore mark saying why its order does not matter.
func TestMapKeysAreSortedOrMarked(t *testing.T) {
	var found []string
	require.NoError(t, filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		found = append(found, unsortedMapWalks(t, path, nil)...)
		return nil
	}))
	require.Empty(t, found, "an unsorted maps.Keys/maps.Values reaches the workflow: wrap it in slices.Sorted, or mark the line //workflowcheck:ignore order-free: why")
}

// The check above can fail: an unsorted walk planted in a file is found,
// and the same walk sorted or marked is not.
func TestMapKeysCheckCatchesAnUnsortedWalk(t *testing.T) {
	for _, c := range []struct {
		src   string
		found int
	}{
		{"for k := range maps.Keys(m) { use(k) }", 1},
		{"vs := slices.Collect(maps.Values(m)); use(vs)", 1},
		{"for _, k := range slices.Sorted(maps.Keys(m)) { use(k) }", 0},
		{"for k := range maps.Keys(m) { //workflowcheck:ignore order-free: a sum\n use(k) }", 0},
	} {
		src := "package p\nfunc f(m map[string]int) {\n" + c.src + "\n}\n"
		require.Len(t, unsortedMapWalks(t, "planted.go", []byte(src)), c.found, c.src)
	}
}

// unsortedMapWalks lists the maps.Keys and maps.Values calls of one file
// (read from path unless src is given) that are neither sorted nor marked.
func unsortedMapWalks(t *testing.T, path string, src []byte) []string {
	t.Helper()
	fset := token.NewFileSet()
	var source any
	if src != nil {
		source = src
	}
	file, err := parser.ParseFile(fset, path, source, parser.ParseComments)
	require.NoError(t, err)
	marked := map[int]bool{}
	for _, group := range file.Comments {
		for _, c := range group.List {
			if strings.Contains(c.Text, "workflowcheck:ignore") {
				marked[fset.Position(c.Pos()).Line] = true
			}
		}
	}
	sorted := map[ast.Expr]bool{}
	var out []string
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if isCall(call, "slices", "Sorted") || isCall(call, "slices", "SortedFunc") {
			for _, a := range call.Args {
				sorted[a] = true
			}
		}
		if (isCall(call, "maps", "Keys") || isCall(call, "maps", "Values")) && !sorted[call] {
			line := fset.Position(call.Pos()).Line
			if !marked[line] && !marked[line-1] {
				out = append(out, fset.Position(call.Pos()).String())
			}
		}
		return true
	})
	return out
}

func isCall(call *ast.CallExpr, pkg, name string) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg
}
