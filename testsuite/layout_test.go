package testsuite

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The core's layers, lowest first: each may import the ones below it and
// no other package of playbook's. None imports the Temporal SDK
// (determinism follows from the core being a plain function of its
// inputs), reads files, runs processes or looks up the host's time zones:
// everything stricter than the workflow's re-parse, and all IO, is in
// playbook/submit, which the workflow cannot import
// (TestWorkflowAdapterImportsOnlyCoreAndSDK).
var coreLayers = []string{"playbook/interpreter/spec/expr", "playbook/interpreter/spec", "playbook/interpreter/contract", "playbook/interpreter/engine"}

func TestCoreLayersImportOnlyWhatIsBelowThem(t *testing.T) {
	for i, pkg := range coreLayers {
		below := coreLayers[:i]
		for _, dep := range goList(t, "-deps", pkg) {
			require.False(t, strings.HasPrefix(dep, "go.temporal.io/"), "%s depends on %s: the core never reaches Temporal", pkg, dep)
			if strings.HasPrefix(dep, "playbook/") && dep != pkg {
				require.Contains(t, below, dep, "%s depends on %s: a layer may use only the layers below it (%s)", pkg, dep, strings.Join(below, ", "))
			}
		}
		for _, imp := range goList(t, "-f", `{{join .Imports "\n"}}`, pkg) {
			require.NotContains(t, []string{"os", "os/exec", "io/fs", "io/ioutil", "net/http", "syscall"}, imp, "%s imports %s: IO belongs in playbook/submit", pkg, imp)
			if pkg == "playbook/interpreter/spec/expr" && strings.Contains(imp, ".") {
				require.True(t, strings.HasPrefix(imp, "github.com/expr-lang/expr"), "%s imports %s: expressions use expr-lang only", pkg, imp)
			}
		}
		dir := filepath.Join("..", strings.TrimPrefix(pkg, "playbook/"))
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		require.NotEmpty(t, files, dir)
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			// time.LoadLocationFromTZData reads the bytes it is given.
			require.NotRegexp(t, `time\.LoadLocation\(`, string(b), "%s looks up the host's time zones: that is playbook/submit's", f)
		}
	}
}

// The workflow adapter depends on the core and on the SDK's workflow side
// only: never on the submission's checks (playbook/submit) nor on the
// activities (processes, HTTP, randomness), whose data it shares through
// playbook/contract.
func TestWorkflowAdapterImportsOnlyCoreAndSDK(t *testing.T) {
	const adapter = "playbook/interpreter/playbookwf"
	for _, dep := range goList(t, "-deps", adapter) {
		require.False(t, strings.HasPrefix(dep, "playbook/") && dep != adapter && !slices.Contains(coreLayers, dep),
			"%s depends on %s (the workflow may reach the core only: never the submission's checks, playbook/submit)", adapter, dep)
	}
	// enums/v1 holds the retry states and timeout types the temporal
	// package's errors report.
	allowed := map[string]bool{"go.temporal.io/sdk/workflow": true, "go.temporal.io/sdk/temporal": true, "go.temporal.io/api/enums/v1": true}
	imports := goList(t, "-f", `{{join .Imports "\n"}}`, adapter)
	require.Contains(t, imports, "go.temporal.io/sdk/workflow")
	for _, imp := range imports {
		if strings.HasPrefix(imp, "go.temporal.io/") {
			require.True(t, allowed[imp], "%s imports %s: only the SDK's workflow and temporal packages", adapter, imp)
		}
	}
}

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).CombinedOutput()
	require.NoError(t, err, string(out))
	return strings.Fields(string(out))
}

// Playbook's own packages read YAML with go.yaml.in/yaml/v3 and parse
// flags with cobra: none imports the archived gopkg.in/yaml.v3 or
// urfave/cli. (go.mod still lists gopkg.in/yaml.v3 as indirect: the
// embedded Temporal server's config package and testify import it.)
func TestOwnPackagesUseTheMaintainedLibraries(t *testing.T) {
	lines := goList(t, "-f", `{{.ImportPath}}:{{join .Imports ","}},{{join .TestImports ","}},{{join .XTestImports ","}}`, "playbook/...")
	require.NotEmpty(t, lines)
	for _, l := range lines {
		pkg, imports, _ := strings.Cut(l, ":")
		for _, imp := range strings.Split(imports, ",") {
			require.False(t, imp == "gopkg.in/yaml.v3" || strings.HasPrefix(imp, "github.com/urfave/cli"), "%s imports %s", pkg, imp)
		}
	}
	mod, err := os.ReadFile("../go.mod")
	require.NoError(t, err)
	require.NotContains(t, string(mod), "github.com/urfave/cli")
	require.Contains(t, string(mod), "github.com/spf13/cobra")
	require.Contains(t, string(mod), "go.yaml.in/yaml/v3")
}
