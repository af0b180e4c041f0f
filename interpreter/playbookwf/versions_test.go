package playbookwf

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Change IDs are declared in the registry only: no other file of the
// package asks a version, and every ID is registered once.
func TestVersionsAreAskedThroughTheRegistry(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, f := range files {
		if f == "versions.go" || strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NotContains(t, string(b), "GetVersion(", "%s asks a version outside the registry (versions.go)", f)
	}
	seen := map[string]bool{}
	for _, c := range Changes() {
		require.False(t, seen[c.ID], "change %s registered twice", c.ID)
		seen[c.ID] = true
		require.GreaterOrEqual(t, int(c.Max), 1, c.ID)
		require.NotEmpty(t, c.Where, c.ID)
		require.NotEmpty(t, c.What, c.ID)
	}
}

// docs/VERSIONING.md's table lists exactly the registered changes, with
// their maximum versions, in the order they were made.
func TestChangesAreDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "VERSIONING.md"))
	require.NoError(t, err)
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\| ([0-9]+) \\|")
	var documented, registered []string
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		documented = append(documented, m[1]+" "+m[2])
	}
	for _, c := range Changes() {
		registered = append(registered, c.ID+" "+strconv.Itoa(int(c.Max)))
	}
	require.Equal(t, registered, documented, "docs/VERSIONING.md's table of versions")
}
