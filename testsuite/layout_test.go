package testsuite

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

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
	parallel(t)
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
