package playtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A playbook with a concurrency limit is tested as any other: its one run
// always gets its slot (docs/TESTING.md).
func TestConcurrencyLimitIsAlwaysGranted(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "deploy.yaml"), []byte(`metadata: {name: deploy}
workload: {service: web}
concurrency: {key: "{{ workload.service }}", limit: 1, on_limit: fail}
workflow:
  - step: roll
    tool: {kind: shell, command: "./deploy.sh"}
`), 0o644))
	test := filepath.Join(dir, "deploy.test.yaml")
	require.NoError(t, os.WriteFile(test, []byte(`cases:
  - name: rolls out
    mocks:
      roll: { result: { stdout: rolled } }
    expect:
      status: completed
      steps:
        roll: completed
`), 0o644))
	r := runNamed(t, test, "rolls out")
	require.True(t, r.Passed, "%v\n%s", r.Problems, r.Steps)
	require.Nil(t, r.Aggregate.Queued)
}
