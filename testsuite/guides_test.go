package testsuite

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// guides are the Markdown files whose command blocks run as tests: the
// README and every guide under docs/, in that order.
func guides(t *testing.T) []string {
	docs, err := filepath.Glob("../docs/*.md")
	require.NoError(t, err)
	require.NotEmpty(t, docs, "no guide under docs/")
	return append([]string{"../README.md"}, docs...)
}

// Every command line of every guide under docs/ runs as written, as the
// README's do (TestReadmeCommands): one file after another on the shared
// test server, each file's lines in order.
func TestGuideCommands(t *testing.T) {
	// Serial: t.Setenv (the docs run as printed) (see parallel).
	for _, path := range guides(t)[1:] {
		lines := readmeLines(t, path)
		if len(lines) == 0 {
			continue
		}
		t.Run(filepath.Base(path), func(t *testing.T) { runGuideLines(t, lines) })
	}
}

// No two guides share a run ID: their lines run on one server, and a
// guide that cancels or retries another's run would depend on the order
// the files run in.
func TestGuideRunIDsAreTheirOwn(t *testing.T) {
	parallel(t)
	owner := map[string]string{}
	for _, path := range guides(t) {
		for _, l := range readmeLines(t, path) {
			for i, a := range l.args {
				if a != "--id" || i+1 == len(l.args) {
					continue
				}
				id := l.args[i+1]
				if other, ok := owner[id]; ok && other != path {
					t.Errorf("run ID %s is used by %s and %s", id, other, path)
				}
				owner[id] = path
			}
		}
	}
}

// Every form of the CLI table, wherever the table lives, has a line in
// some guide's command blocks that the tests run.
func TestGuideCLITableRowsRun(t *testing.T) {
	parallel(t)
	run := map[string]bool{}
	rows := 0
	for _, path := range guides(t) {
		for _, l := range readmeLines(t, path) {
			run[l.args[0]] = true
		}
	}
	for _, path := range guides(t) {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		for _, m := range regexp.MustCompile("(?m)^\\| `playbook ([a-z-]+)").FindAllStringSubmatch(string(b), -1) {
			rows++
			require.True(t, run[m[1]], "%s: the CLI table's `playbook %s` has no example line the tests run", strings.TrimPrefix(path, "../"), m[1])
		}
	}
	require.NotZero(t, rows, "no guide holds the CLI table (rows starting | `playbook CMD`)")
}
