package interpreter_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The CLI holds flags, printing and exit codes; the client side of a run
// (what it asks of Temporal and how it reads the answers) is runs/'s, for
// every front end. These are the marks of client logic the CLI must not
// hold, by kind: a visibility query, a walk over a run's history, a
// retry's plan, starting a run, reconciling schedules.
var clientMarks = map[string]struct {
	calls   []string // methods or functions called (a schedule client's as ScheduleClient().NAME)
	strings []string // text in a string literal
}{
	"visibility query": {
		calls:   []string{"ListWorkflow", "ListOpenWorkflow", "ListClosedWorkflow", "ListArchivedWorkflow", "ScanWorkflow", "CountWorkflow"},
		strings: []string{"WorkflowType =", "WorkflowType IN", "ExecutionStatus =", "ExecutionStatus !=", "StartTime >="},
	},
	"history walk":            {calls: []string{"GetWorkflowHistory", "GetWorkflowExecutionHistory"}},
	"retry planning":          {calls: []string{"PlanReuse", "StepDefinitions"}},
	"run start":               {calls: []string{"ExecuteWorkflow", "SignalWithStartWorkflow"}},
	"schedule reconciliation": {calls: []string{"Differences", "ScheduleClient().Create", "ScheduleClient().List"}},
}

// cliAllowed are the CLI files that may still hold a kind: replaying a
// run (`playbook replay`) reads its history as a worker would.
var cliAllowed = map[string][]string{
	"replay.go": {"history walk"},
}

// parseDir parses dir's Go files, tests aside, by path.
func parseDir(t *testing.T, dir string, mode parser.Mode) (*token.FileSet, map[string]*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	files := map[string]*ast.File{}
	for _, path := range paths {
		if !strings.HasSuffix(path, "_test.go") {
			f, err := parser.ParseFile(fset, path, nil, mode)
			require.NoError(t, err)
			files[path] = f
		}
	}
	return fset, files
}

// clientLogic lists, file by file, the client logic in dir's Go files
// (tests aside) that allowed does not let the file hold.
func clientLogic(t *testing.T, dir string, allowed map[string][]string) []string {
	t.Helper()
	fset, files := parseDir(t, dir, 0)
	var out []string
	for _, path := range slices.Sorted(maps.Keys(files)) {
		f := files[path]
		report := func(pos token.Pos, kind, what string) {
			if !slices.Contains(allowed[filepath.Base(path)], kind) {
				out = append(out, fset.Position(pos).String()+": "+kind+" ("+what+")")
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			for kind, marks := range clientMarks {
				switch n := n.(type) {
				case *ast.CallExpr:
					name := ""
					switch fn := n.Fun.(type) {
					case *ast.SelectorExpr:
						name = fn.Sel.Name
						if inner, ok := fn.X.(*ast.CallExpr); ok {
							if sel, ok := inner.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "ScheduleClient" {
								name = "ScheduleClient()." + name
							}
						}
					case *ast.Ident:
						name = fn.Name
					}
					if slices.Contains(marks.calls, name) {
						report(n.Pos(), kind, name)
					}
				case *ast.BasicLit:
					if n.Kind != token.STRING {
						continue
					}
					s, _ := strconv.Unquote(n.Value)
					for _, m := range marks.strings {
						if strings.Contains(s, m) {
							report(n.Pos(), kind, strconv.Quote(m))
						}
					}
				}
			}
			return true
		})
	}
	slices.Sort(out)
	return out
}

// TestCLIHoldsNoClientLogic: cmd/playbook/commands asks runs/ for what it
// shows, and holds no visibility query, no history walk, no retry
// planning, no start of a run and no schedule reconciliation of its own.
func TestCLIHoldsNoClientLogic(t *testing.T) {
	require.Empty(t, clientLogic(t, "../cmd/playbook/commands", cliAllowed), "client logic in the CLI: it belongs in runs/")
}

// mcpServer is the MCP server's package: a front end on runs/, as the CLI is.
const mcpServer = "../internal/mcpserver"

// TestMCPServerReachesTemporalOnlyThroughRuns: the MCP server holds no
// client logic either, and imports no Temporal package: what it asks of
// a run, and the errors it turns into tool errors, are runs/'s.
func TestMCPServerReachesTemporalOnlyThroughRuns(t *testing.T) {
	require.Empty(t, clientLogic(t, mcpServer, nil), "client logic in the MCP server: it belongs in runs/")
	require.Empty(t, temporalImports(t, mcpServer), "the MCP server imports Temporal: it reaches it through runs/")
}

// temporalImports lists the Go files of dir (tests aside) that import a
// Temporal package, and which.
func temporalImports(t *testing.T, dir string) []string {
	t.Helper()
	_, files := parseDir(t, dir, parser.ImportsOnly)
	var out []string
	for _, path := range slices.Sorted(maps.Keys(files)) {
		for _, imp := range files[path].Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(p, "go.temporal.io/") {
				out = append(out, filepath.Base(path)+": "+p)
			}
		}
	}
	return out
}

// TestTemporalImportCheckCatchesAPlantedImport proves the import check
// above can fail.
func TestTemporalImportCheckCatchesAPlantedImport(t *testing.T) {
	dir := t.TempDir()
	src := "package mcpserver\n\nimport \"go.temporal.io/api/serviceerror\"\n\nvar _ *serviceerror.NotFound\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tools.go"), []byte(src), 0o644))
	require.Equal(t, []string{"tools.go: go.temporal.io/api/serviceerror"}, temporalImports(t, dir))
}

// TestClientLogicCheckCatchesPlantedQueries proves the check above can
// fail: a CLI file that lists runs with a query of its own, walks a
// history, plans a retry, starts a run and reconciles a schedule is
// reported on each count, and only the kinds its file is allowed pass.
func TestClientLogicCheckCatchesPlantedQueries(t *testing.T) {
	dir := t.TempDir()
	src := `package commands

func planted(c client, conn connection) {
	q := "WorkflowType = 'Playbook' AND ExecutionStatus = 'Running'"
	c.ListWorkflow(ctx, q)
	c.GetWorkflowHistory(ctx, "run", "", false, 0)
	engine.PlanReuse(a, b, c, d)
	c.ExecuteWorkflow(ctx, opts, "Playbook", in)
	c.ScheduleClient().Create(ctx, opts)
	w.Differences(have, true)
}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "planted.go"), []byte(src), 0o644))
	got := clientLogic(t, dir, nil)
	require.Equal(t, []string{
		dir + "/planted.go:10:2: schedule reconciliation (Differences)",
		dir + "/planted.go:4:7: visibility query (\"ExecutionStatus =\")",
		dir + "/planted.go:4:7: visibility query (\"WorkflowType =\")",
		dir + "/planted.go:5:2: visibility query (ListWorkflow)",
		dir + "/planted.go:6:2: history walk (GetWorkflowHistory)",
		dir + "/planted.go:7:2: retry planning (PlanReuse)",
		dir + "/planted.go:8:2: run start (ExecuteWorkflow)",
		dir + "/planted.go:9:2: schedule reconciliation (ScheduleClient().Create)",
	}, got)
	got = clientLogic(t, dir, map[string][]string{"planted.go": {"history walk", "retry planning", "run start", "schedule reconciliation"}})
	require.Len(t, got, 3, got)
}

// workflowImports are the packages and files that may import the workflow
// package: the CLI's `playbook version` lists its version gates. Nothing
// else of the CLI, nor runs/, nor internal/devserver, depends on it
// directly; the CLI reaches it through worker/ (the worker it runs, the
// replay it does).
var workflowImporters = map[string][]string{
	"playbook/cmd/playbook/commands": {"version.go"},
	"playbook/runs":                  nil,
	"playbook/internal/devserver":    nil,
	"playbook/internal/mcpserver":    nil,
}

// workflowImportsIn lists the Go files of dir (tests aside) that import
// the workflow package and are not allowed to.
func workflowImportsIn(t *testing.T, dir string, allowed []string) []string {
	t.Helper()
	_, files := parseDir(t, dir, parser.ImportsOnly)
	var out []string
	for path, f := range files {
		if slices.Contains(allowed, filepath.Base(path)) {
			continue
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == adapter {
				out = append(out, filepath.Base(path))
			}
		}
	}
	return out
}

// playbookDeps is the closure of pkg's imports within the module, read
// from the Go files (tests aside; every build tag) as the compiler would:
// a package outside the module never imports one of playbook's, so it
// is every package of playbook's that pkg depends on. Faster than
// `go list -deps`, which loads the embedded Temporal server's graph.
func playbookDeps(t *testing.T, pkg string) []string {
	t.Helper()
	seen := map[string]bool{}
	var visit func(string)
	visit = func(p string) {
		_, files := parseDir(t, filepath.Join("..", strings.TrimPrefix(p, "playbook/")), parser.ImportsOnly)
		for _, f := range files {
			for _, imp := range f.Imports {
				if q, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(q, "playbook/") && !seen[q] {
					seen[q] = true
					visit(q)
				}
			}
		}
	}
	visit(pkg)
	var out []string
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// TestOnlyTheVersionRegistryAndReplayReachTheWorkflow: a client reads the
// wire from interpreter/contract. runs/ and internal/devserver do not
// depend on the workflow package at all; the CLI imports it only where it
// lists the version registry, and reaches it otherwise through worker/
// (the worker it runs, the replay it does).
func TestOnlyTheVersionRegistryAndReplayReachTheWorkflow(t *testing.T) {
	for _, pkg := range []string{"playbook/runs", "playbook/internal/devserver"} {
		require.NotContains(t, playbookDeps(t, pkg), adapter, "%s depends on the workflow package", pkg)
	}
	// The closure is right: the CLI reaches the workflow, and through worker/.
	require.Contains(t, playbookDeps(t, "playbook/worker"), adapter)
	for pkg, allowed := range workflowImporters {
		dir := filepath.Join("..", strings.TrimPrefix(pkg, "playbook/"))
		require.Empty(t, workflowImportsIn(t, dir, allowed), "%s imports %s beyond %v", pkg, adapter, allowed)
	}
}

// TestWorkflowImportCheckCatchesAPlantedImport proves the file check above
// can fail.
func TestWorkflowImportCheckCatchesAPlantedImport(t *testing.T) {
	dir := t.TempDir()
	src := "package commands\n\nimport \"" + adapter + "\"\n\nvar _ = playbookwf.Input{}\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "status.go"), []byte(src), 0o644))
	require.Equal(t, []string{"status.go"}, workflowImportsIn(t, dir, []string{"version.go"}))
	require.Empty(t, workflowImportsIn(t, dir, []string{"status.go"}))
}
