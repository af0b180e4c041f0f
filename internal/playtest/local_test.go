package playtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A local step's mocked attempts go through the same retry decision as an
// ordinary step's; the delays between them (jittered, decided by each
// attempt and recorded in its local activity's marker) are not compared
// by the determinism check, as an activity's own retry delays are not.
func TestLocalStepCasesPass(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../playbooks/flaky.yaml")
	require.NoError(t, err)
	local := strings.Replace(string(src), "\nworkflow:\n", "\nlocal: true\nworkflow:\n", 1)
	require.NotEqual(t, string(src), local)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "flaky.yaml"), []byte(local), 0o644))
	tests, err := os.ReadFile("../../playbooks/flaky.test.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "flaky.test.yaml"), tests, 0o644))
	for _, name := range []string{"fails twice, then succeeds", "gives up after five attempts"} {
		r := runNamed(t, filepath.Join(dir, "flaky.test.yaml"), name)
		require.True(t, r.Passed, "%s: %v\n%s", name, r.Problems, r.Steps)
	}
}
