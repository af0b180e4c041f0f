package playtest

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every example playbook has a test file, and every case passes: what
// `make test` runs as `playbook test playbooks/`.
func TestExamplesPass(t *testing.T) {
	var missing []string
	require.NoError(t, filepath.WalkDir("../../playbooks", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") && !strings.HasSuffix(path, Suffix) {
			if !fileExists(strings.TrimSuffix(path, ".yaml") + Suffix) {
				missing = append(missing, path)
			}
		}
		return err
	}))
	require.Empty(t, missing, "examples without a test file")
	rep, err := Run([]string{"../../playbooks"}, Options{}, nil)
	require.NoError(t, err)
	require.Empty(t, rep.Malformed)
	for _, r := range rep.Results {
		require.True(t, r.Passed, "%s: case %q: %v\n%s", r.File, r.Case, r.Problems, r.Steps)
	}
	require.Greater(t, rep.Passed, 60)
}
