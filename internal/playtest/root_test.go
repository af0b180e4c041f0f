package playtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A test file under the root that names a playbook outside it is refused
// with the same line whether that playbook is there or not, by its name
// or through a symbolic link; under the root, a missing one is said to be
// missing.
func TestPlaybookOutsideRootIsRefusedAlike(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "t"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(base, "there.yaml"), []byte(touches), 0o644))
	require.NoError(t, os.Symlink(base, filepath.Join(root, "up")))
	require.NoError(t, os.Symlink(filepath.Join(base, "there.yaml"), filepath.Join(root, "there-link.yaml")))
	require.NoError(t, os.Symlink(filepath.Join(base, "gone.yaml"), filepath.Join(root, "gone-link.yaml")))
	require.NoError(t, os.WriteFile(filepath.Join(root, "in.yaml"), []byte(touches), 0o644))

	refused := func(playbook string) string {
		t.Helper()
		path := filepath.Join(root, "t", "x"+Suffix)
		require.NoError(t, os.WriteFile(path, []byte("playbook: "+playbook+"\ncases:\n  - name: c\n    expect: { status: completed }\n"), 0o644))
		_, err := LoadWith(path, Options{Root: root})
		var bad *MalformedError
		require.ErrorAs(t, err, &bad, playbook)
		require.Len(t, bad.Lines, 1)
		return strings.Replace(bad.Lines[0], playbook, "P", 1)
	}
	outside := filepath.Join(root, "t", "x"+Suffix) + ":1: playbook P: outside " + root + ", the directory these tests may read"
	for _, pb := range []string{
		"../../there.yaml", "../../gone.yaml", // by name
		filepath.Join(base, "there.yaml"), "/no/such/dir/gone.yaml", // absolute
		"../up/there.yaml", "../up/gone.yaml", // through a linked directory
		"../there-link.yaml", "../gone-link.yaml", // a link to a file, and one to nothing
	} {
		require.Equal(t, outside, refused(pb), pb)
	}
	require.Equal(t, filepath.Join(root, "t", "x"+Suffix)+":1: playbook P: no such file or directory", refused("../missing.yaml"))

	// Without a root, the CLI says what it finds.
	path := filepath.Join(root, "t", "x"+Suffix)
	require.NoError(t, os.WriteFile(path, []byte("playbook: ../../gone.yaml\ncases:\n  - name: c\n    expect: { status: completed }\n"), 0o644))
	_, err := Load(path)
	require.EqualError(t, err, path+":1: playbook ../../gone.yaml: no such file or directory")

	// A case's input file and the test file itself keep to the root too.
	require.NoError(t, os.WriteFile(path, []byte("playbook: ../in.yaml\ncases:\n  - name: c\n    input: ../../there.yaml\n    expect: { status: completed }\n"), 0o644))
	_, err = LoadWith(path, Options{Root: root})
	require.EqualError(t, err, path+`:3: case "c": input ../../there.yaml: outside `+root+", the directory these tests may read")
	_, err = LoadWith(filepath.Join(root, "up", "x"+Suffix), Options{Root: root})
	require.EqualError(t, err, filepath.Join(root, "up", "x"+Suffix)+": outside "+root+", the directory these tests may read")
}
