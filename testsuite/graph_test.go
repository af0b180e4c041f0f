package testsuite

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// mermaidLine is the grammar `playbook graph` writes: a header, node
// definitions, arrows (optionally labelled), class definitions and uses.
var mermaidLine = regexp.MustCompile(`^(flowchart TD|    (s\d+)(\["[^"]*"\]|\(\["[^"]*"\]\))|    (s\d+) (-->|-\.->)(\|("[^"]*"|[a-z_]+)\|)? (s\d+)|    classDef [a-z_]+ [a-z:#0-9,]+|    class (s\d+,)*s\d+ [a-z_]+)$`)

// graphs prints the graph of every example, and one coloured by a run.
func graphs(t *testing.T) map[string]string {
	files := examplePlaybooks(t)
	out := map[string]string{}
	for _, f := range files {
		code, g, errOut := cli(t, "graph", f)
		require.Equal(t, 0, code, errOut)
		out[filepath.Base(f)] = g
	}
	r := runExample(t, "failure_cleanup.yaml")
	code, g, errOut := cli(t, "graph", "--address", server.Address, "--run", r.agg.WorkflowID, "../playbooks/failure_cleanup.yaml")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, g, "classDef failed fill:#ffcdd2")
	require.Contains(t, g, "class s1 failed", "transform is coloured failed")
	require.Contains(t, g, "class s3 skipped")
	out["failure_cleanup-run"] = g
	return out
}

// Every graph is well formed: each line is flowchart syntax, and every
// arrow joins nodes that are defined.
func TestGraphIsWellFormedMermaid(t *testing.T) {
	parallel(t)
	for name, g := range graphs(t) {
		defined := map[string]bool{}
		for i, line := range strings.Split(strings.TrimRight(g, "\n"), "\n") {
			m := mermaidLine.FindStringSubmatch(line)
			require.NotNil(t, m, "%s line %d: %q", name, i+1, line)
			if m[2] != "" {
				defined[m[2]] = true
			}
			if m[4] != "" {
				require.True(t, defined[m[4]] && defined[m[8]], "%s line %d joins undefined nodes: %q", name, i+1, line)
			}
		}
	}
}

// Mermaid's own parser accepts every graph. It reaches the npm registry,
// so it runs only when asked (PLAYBOOK_TEST_NPM=1, as .ci/run does) where
// node and npm are installed (the packages are fetched once into the
// user's cache).
func TestGraphParsesWithMermaid(t *testing.T) {
	parallel(t)
	needNPM(t)
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node on this machine")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("no npm on this machine")
	}
	cache, err := os.UserCacheDir()
	require.NoError(t, err)
	dir := filepath.Join(cache, "playbook-mermaid-check")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, f := range []string{"package.json", "check.mjs"} {
		b, err := os.ReadFile(filepath.Join("testdata", "mermaid", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "mermaid")); err != nil {
		install := exec.Command("npm", "install", "--no-audit", "--no-fund", "--silent")
		install.Dir = dir
		if out, err := install.CombinedOutput(); err != nil {
			t.Skipf("cannot install mermaid from the npm registry (offline?): %v\n%s", err, out)
		}
	}
	files := []string{}
	tmp := t.TempDir()
	for name, g := range graphs(t) {
		f := filepath.Join(tmp, name+".mmd")
		require.NoError(t, os.WriteFile(f, []byte(g), 0o644))
		files = append(files, f)
	}
	broken := filepath.Join(tmp, "broken.mmd")
	require.NoError(t, os.WriteFile(broken, []byte("flowchart TD\n    s0 -->\n"), 0o644))

	check := exec.Command("node", append([]string{filepath.Join(dir, "check.mjs")}, files...)...)
	out, err := check.CombinedOutput()
	require.NoError(t, err, "mermaid rejected a graph:\n%s", out)
	require.Equal(t, len(files), strings.Count(string(out), ": ok flowchart"))

	check = exec.Command("node", filepath.Join(dir, "check.mjs"), broken)
	out, err = check.CombinedOutput()
	require.Error(t, err, "the check can fail: %s", out)
}
