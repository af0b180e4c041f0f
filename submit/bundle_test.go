package submit

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"playbook/interpreter/spec"

	"github.com/stretchr/testify/require"
)

func readFrom(files map[string]string) func(string) ([]byte, error) {
	return func(abs string) ([]byte, error) {
		src, ok := files[abs]
		if !ok {
			return nil, fs.ErrNotExist
		}
		return []byte(src), nil
	}
}

func TestLoadBundle(t *testing.T) {
	files := map[string]string{
		"/p/main.yaml":     "metadata: {name: main}\nworkflow:\n  - {step: load, tool: {kind: playbook, path: sub/load.yaml}}\n  - {step: again, tool: {kind: playbook, path: /p/sub/load.yaml}}\n",
		"/p/sub/load.yaml": "metadata: {name: load}\nworkflow:\n  - {step: one, tool: {kind: playbook, path: ../leaf.yaml}}\n",
		"/p/leaf.yaml":     "metadata: {name: leaf}\nworkflow:\n  - {step: x, tool: {kind: noop}}\n",
	}
	b, err := LoadBundle("/p/main.yaml", readFrom(files))
	require.NoError(t, err)
	require.Equal(t, "main", b.Root.Name)
	require.Equal(t, "/p/main.yaml", b.RootPath)
	require.Equal(t, files, b.Files, "every file of the tree is frozen, each once")
	require.Equal(t, "/p/sub/load.yaml", spec.SubPlaybookPath("/p", "sub/load.yaml"))
}

func TestLoadBundleErrors(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"a cycle of includes", map[string]string{
			"/p/a.yaml": "metadata: {name: a}\nworkflow:\n  - {step: call_b, tool: {kind: playbook, path: b.yaml}}\n",
			"/p/b.yaml": "metadata: {name: b}\nworkflow:\n  - step: call_a\n    tool: {kind: playbook, path: a.yaml}\n",
		}, `/p/b.yaml:4: step "call_a": sub-playbooks include each other: /p/a.yaml -> /p/b.yaml -> /p/a.yaml`},
		{"a file including itself", map[string]string{
			"/p/a.yaml": "metadata: {name: a}\nworkflow:\n  - {step: me, tool: {kind: playbook, path: ./a.yaml}}\n",
		}, `/p/a.yaml:3: step "me": sub-playbooks include each other: /p/a.yaml -> /p/a.yaml`},
		{"a missing sub-playbook", map[string]string{
			"/p/a.yaml": "metadata: {name: a}\nworkflow:\n  - {step: load, tool: {kind: playbook, path: lod.yaml}}\n",
		}, `/p/a.yaml:3: step "load": sub-playbook lod.yaml: cannot read: file does not exist`},
		{"an invalid sub-playbook names its own file", map[string]string{
			"/p/a.yaml": "metadata: {name: a}\nworkflow:\n  - {step: load, tool: {kind: playbook, path: b.yaml}}\n",
			"/p/b.yaml": "metadata: {name: b}\nworkflow:\n  - {step: x, next: y}\n",
		}, `/p/b.yaml:3: step "x": next names unknown step "y"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadBundle("/p/a.yaml", readFrom(tc.files))
			var perr *spec.Error
			require.True(t, errors.As(err, &perr), "%v", err)
			require.Equal(t, tc.want, err.Error())
		})
	}
}

// A file's own mistakes do not hide its sub-playbooks': a missing recovery
// script, a missing sub-playbook and an error inside another sub-playbook
// are told together, each file's in its order.
func TestLoadBundleTellsEveryFilesMistakes(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		dir + "/main.yaml": `metadata: {name: main}
failure_handlers:
  - name: h
    rules:
      - {exit_codes: [3], recovery_script: ./missing.sh}
workflow:
  - {step: a, tool: {kind: shell, command: "exit 3"}, failure_handler: h}
  - {step: gone, tool: {kind: playbook, path: gone.yaml}}
  - {step: sub, tool: {kind: playbook, path: sub.yaml}}
`,
		dir + "/sub.yaml": "metadata: {name: sub}\nworkflow:\n  - {step: x, tool: {kind: noop}, next: nowhere}\n",
	}
	_, err := LoadBundle(dir+"/main.yaml", readFrom(files))
	require.EqualError(t, err, dir+`/main.yaml:5: failure handler "h": recovery_script ./missing.sh does not exist (looked for `+dir+`/missing.sh)
`+dir+`/main.yaml:8: step "gone": sub-playbook gone.yaml: cannot read: file does not exist
`+dir+`/sub.yaml:3: step "x": next names unknown step "nowhere"`)
}

// Every problem of a schedule is told at once.
func TestCheckScheduleTellsEveryProblem(t *testing.T) {
	_, err := ParseStrict("s.yaml", []byte(`metadata: {name: s}
schedule:
  cron: "0 2 * *"
  timezone: Mars/Olympus
  overlap: sometimes
workflow:
  - {step: a, tool: {kind: noop}}
`), "")
	require.Error(t, err)
	require.Len(t, strings.Split(err.Error(), "\n"), 3, err.Error())
}

// The files' mistakes come in the order the files are read: the playbook's
// own (here found only after its sub-playbook was read), then the
// sub-playbook's.
func TestLoadBundleTellsTheRootFirst(t *testing.T) {
	files := map[string]string{
		"/p/main.yaml": "metadata: {name: main}\nworkflow:\n  - {step: sub, tool: {kind: playbook, path: sub.yaml, workload: {nope: 1}}}\n",
		"/p/sub.yaml":  "metadata: {name: sub}\nworkload: {n: 1}\nworkflow:\n  - {step: x, tool: {kind: noop}, next: nowhere}\n",
	}
	_, err := LoadBundle("/p/main.yaml", readFrom(files))
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 2, err.Error())
	require.True(t, strings.HasPrefix(lines[0], "/p/main.yaml:3:"), err.Error())
	require.True(t, strings.HasPrefix(lines[1], "/p/sub.yaml:4:"), err.Error())
}
