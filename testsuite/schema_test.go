package testsuite

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// `playbook schema` prints the checked-in docs/playbook.schema.json (the
// interpreter's tests validate every example and malformed case with it).
func TestSchemaCommandPrintsTheCheckedInSchema(t *testing.T) {
	parallel(t)
	want, err := os.ReadFile("../docs/playbook.schema.json")
	require.NoError(t, err)
	code, out, errOut := cli(t, "schema")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, string(want), out)
}
