package runs

import (
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/internal/claims"
)

// An object belongs to the run whose workflow ID its key names: a claim's
// key holds the ID escaped as a path segment (an ID with a space, a %),
// which files gc asks the server about as the ID it is, not as escaped:
// else an open run's claims looked like those of a run the server no
// longer knows.
func TestObjectsBelongToTheirRun(t *testing.T) {
	for _, run := range []string{"nightly run 7", "a%b#c;d,e", "plain", "parent.sub"} {
		key := claims.Key(run, "0643f9")
		got, prefix := ownerOf(key)
		require.Equal(t, run, got, key)
		require.Equal(t, key[:len(key)-len("/0643f9")], prefix)
	}
	run, prefix := ownerOf("nightly run 7/make/out.txt")
	require.Equal(t, "nightly run 7", run)
	require.Equal(t, "nightly run 7", prefix)
}
