package interpreter_test

import (
	"go/ast"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The core's layers, lowest first: each may import the ones below it and
// no other package of playbook's. None imports the Temporal SDK
// (determinism follows from the core being a plain function of its
// inputs).
var coreLayers = []string{
	"playbook/interpreter/spec/expr",
	"playbook/interpreter/spec",
	"playbook/interpreter/contract",
	"playbook/interpreter/engine",
}

const adapter = "playbook/interpreter/playbookwf"

type pkgInfo struct{ deps, imports []string }

var listed = sync.OnceValues(func() ([]byte, error) {
	return exec.Command("go", "list", "-f", `{{.ImportPath}}|{{join .Deps " "}}|{{join .Imports " "}}`, "./...").CombinedOutput()
})

// listPackages is one `go list` of the interpreter's packages, shared by
// the tests: their dependencies and direct imports.
func listPackages(t *testing.T) map[string]pkgInfo {
	t.Helper()
	out, err := listed()
	require.NoError(t, err, string(out))
	pkgs := map[string]pkgInfo{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		require.Len(t, f, 3, line)
		pkgs[f[0]] = pkgInfo{strings.Fields(f[1]), strings.Fields(f[2])}
	}
	return pkgs
}

func TestCoreLayersImportOnlyWhatIsBelowThem(t *testing.T) {
	pkgs := listPackages(t)
	for i, pkg := range coreLayers {
		below := coreLayers[:i]
		info, ok := pkgs[pkg]
		require.True(t, ok, "go list did not list %s", pkg)
		for _, dep := range info.deps {
			require.False(t, strings.HasPrefix(dep, "go.temporal.io/"), "%s depends on %s: the core never reaches Temporal", pkg, dep)
			if strings.HasPrefix(dep, "playbook/") {
				require.Contains(t, below, dep, "%s depends on %s: a layer may use only the layers below it (%s)", pkg, dep, strings.Join(below, ", "))
			}
		}
		if pkg == "playbook/interpreter/spec/expr" {
			for _, imp := range info.imports {
				if strings.Contains(imp, ".") {
					require.True(t, strings.HasPrefix(imp, "github.com/expr-lang/expr"), "%s imports %s: expressions use expr-lang only", pkg, imp)
				}
			}
		}
	}
}

// The workflow adapter depends on the core and on the SDK's workflow side
// only: never on the submission's checks (playbook/submit) nor on the
// activities (processes, HTTP, randomness), whose data it shares through
// playbook/interpreter/contract.
func TestWorkflowAdapterImportsOnlyCoreAndSDK(t *testing.T) {
	info := listPackages(t)[adapter]
	for _, dep := range info.deps {
		require.False(t, strings.HasPrefix(dep, "playbook/") && !slices.Contains(coreLayers, dep),
			"%s depends on %s (the workflow may reach the core only: never the submission's checks, playbook/submit)", adapter, dep)
	}
	// enums/v1 holds the retry states and timeout types the temporal
	// package's errors report.
	allowed := map[string]bool{"go.temporal.io/sdk/workflow": true, "go.temporal.io/sdk/temporal": true, "go.temporal.io/api/enums/v1": true}
	require.Contains(t, info.imports, "go.temporal.io/sdk/workflow")
	for _, imp := range info.imports {
		if strings.HasPrefix(imp, "go.temporal.io/") {
			require.True(t, allowed[imp], "%s imports %s: only the SDK's workflow and temporal packages", adapter, imp)
		}
	}
}

// bannedImports reach the host, the network or randomness, or a package
// whose checks are stricter than replay: none belongs where the workflow
// decides. (net/url only parses, and stays allowed.)
var bannedImports = []string{
	"os", "os/exec", "os/signal", "os/user", "io/fs", "io/ioutil", "syscall", "net",
	"math/rand", "math/rand/v2", "crypto/rand", "plugin", "runtime",
	"playbook/submit", "playbook/activities", "playbook/worker",
}

// bannedCalls read the clock, wait on it, or look up the host's zones;
// the workflow has workflow.Now, workflow.Sleep and workflow.NewTimer.
var bannedCalls = []string{"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker", "LoadLocation"}

// boundaryViolations reads the Go files (tests aside) of dir and lists
// what would break replay: a banned import, a call of the time package
// that reads the clock, a goroutine or a select outside the SDK's own.
func boundaryViolations(t *testing.T, dir string) []string {
	t.Helper()
	fset, files := parseDir(t, dir, 0)
	var out []string
	for _, path := range slices.Sorted(maps.Keys(files)) {
		f := files[path]
		timeName := ""
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if slices.Contains(bannedImports, p) || (strings.HasPrefix(p, "net/") && p != "net/url") || strings.HasPrefix(p, "playbook/cmd") {
				out = append(out, fset.Position(imp.Pos()).String()+": imports "+p)
			}
			if p == "time" {
				timeName = "time"
				if imp.Name != nil {
					timeName = imp.Name.Name
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				out = append(out, fset.Position(n.Pos()).String()+": starts a goroutine (workflow.Go)")
			case *ast.SelectStmt:
				out = append(out, fset.Position(n.Pos()).String()+": selects on channels (workflow.Selector)")
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && timeName != "" && x.Name == timeName && slices.Contains(bannedCalls, n.Sel.Name) {
					out = append(out, fset.Position(n.Pos()).String()+": calls time."+n.Sel.Name)
				}
			}
			return true
		})
	}
	return out
}

// TestReplayBoundary: nothing the workflow evaluates reads the clock, the
// host, the network or randomness, or starts a goroutine of its own.
func TestReplayBoundary(t *testing.T) {
	for _, pkg := range append(slices.Clone(coreLayers), adapter) {
		dir := strings.TrimPrefix(pkg, "playbook/interpreter/")
		require.Empty(t, boundaryViolations(t, dir), "%s crosses the replay boundary", pkg)
	}
}

// TestReplayBoundaryCatchesAPlantedClockRead proves the check above can
// fail: a workflow file that reads the clock, imports os and starts a
// goroutine is reported on each count.
func TestReplayBoundaryCatchesAPlantedClockRead(t *testing.T) {
	dir := t.TempDir()
	src := `package playbookwf

import (
	"os"
	clock "time"
)

func planted() {
	_ = clock.Now()
	_ = os.Getenv("HOME")
	go func() {}()
}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "planted.go"), []byte(src), 0o644))
	got := boundaryViolations(t, dir)
	require.Len(t, got, 3, got)
	require.Contains(t, strings.Join(got, "\n"), "planted.go:4:2: imports os")
	require.Contains(t, strings.Join(got, "\n"), "planted.go:9:6: calls time.Now")
	require.Contains(t, strings.Join(got, "\n"), "planted.go:11:2: starts a goroutine")
}
