package testsuite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
)

// recordedLoop loops over workload.parts: element b fails its first
// attempt and its retry succeeds; the part named by workload.bad exits 3.
// Which branch after the loop runs depends on element 1's result.
const recordedLoop = `metadata: { name: recorded-loop }
workload: { parts: [a, b, a, a], bad: none }
workflow:
  - step: each
    loop: { in: "workload.parts", iterator: part }
    tool:
      kind: shell
      command: 'if [ "$P" = "$BAD" ]; then echo "$P is corrupt" >&2; exit 3; fi; if [ "$P" = b ] && [ "$PLAYBOOK_ATTEMPT" = 1 ]; then echo busy >&2; exit 75; fi; echo "part $P"'
      env: { P: "{{ part }}", BAD: "{{ workload.bad }}" }
    retry: { max_attempts: 2, initial_delay: 100ms }
    next:
      - when: "steps.each.result[1].stdout contains 'part b'"
        then: found_b
      - else: [no_b]
  - step: found_b
    tool: { kind: noop }
  - step: no_b
    tool: { kind: noop }
`

// --record of a run with a loop, completed or failed, writes the loop's
// mock element by element, as the test file takes it, and the recorded
// cases pass on the playbook as it ran.
func TestRecordARunWithALoop(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	pb := writePlaybook(t, dir, "loop.yaml", recordedLoop)
	code, agg := runJSON(t, "--id", "recorded-loop-ok", pb)
	require.Equal(t, 0, code, "%+v", agg.Steps)
	require.Equal(t, 2, agg.Steps["each"].Attempts)
	require.Equal(t, contract.StatusCompleted, agg.Steps["found_b"].Status)
	code, agg = runJSON(t, "--id", "recorded-loop-bad", "--set", "bad=a", pb)
	require.Equal(t, 1, code, "%+v", agg.Steps)
	require.Equal(t, contract.StatusFailed, agg.Steps["each"].Status)
	require.Equal(t, 3.0, agg.Steps["each"].Error.Details.(map[string]any)["failed_elements"])

	testFile := filepath.Join(dir, "loop.test.yaml")
	for _, run := range []string{"recorded-loop-ok", "recorded-loop-bad"} {
		code, _, errOut := cli(t, "test", "--address", server.Address, "--record", run, "-o", testFile)
		require.Equal(t, 0, code, errOut)
	}
	b, err := os.ReadFile(testFile)
	require.NoError(t, err)
	text := string(b)
	t.Logf("%s", text)
	ok, bad, _ := strings.Cut(text, "recorded-loop-bad")
	// The completed loop: the result most elements gave is the step's own,
	// element 0 takes the step's time, element 1 fails once then succeeds.
	require.Contains(t, ok, "      each:\n        result: {\"exit_code\":0,\"json\":null,\"stderr\":\"\",\"stdout\":\"part a\\n\"}\n        elements:\n")
	require.Regexp(t, `\n          0: \{ result: \{[^\n]*"stdout":"part a\\n"\}, takes: [0-9.]+m?s \}\n`, ok)
	require.Contains(t, ok, "\n          1: { attempts: [{ error: { exit_code: 75, stderr: \"busy\\n\" } }, { result: {\"exit_code\":0,\"json\":null,\"stderr\":\"\",\"stdout\":\"part b\\n\"} }] }\n")
	require.NotContains(t, ok, "          2:", "element 2 gave the step's own result")
	// The failed loop: no result is kept. Each element that failed an
	// attempt gives its errors, then, if it did not fail, its result; the
	// first that failed takes the step's time.
	require.Contains(t, bad, "      each:\n        result: null\n        elements:\n")
	require.Regexp(t, `\n          0: \{ attempts: \[\{ error: \{ exit_code: 3, stderr: "a is corrupt\\n" \} \}, \{ error: \{ exit_code: 3, stderr: "a is corrupt\\n" \}, takes: [0-9.]+m?s \}\] \}\n`, bad)
	require.Contains(t, bad, "\n          1: { attempts: [{ error: { exit_code: 75, stderr: \"busy\\n\" } }, { result: null }] }\n")
	for _, i := range []string{"2", "3"} {
		require.Contains(t, bad, "\n          "+i+": { attempts: [{ error: { exit_code: 3, stderr: \"a is corrupt\\n\" } }, { error: { exit_code: 3, stderr: \"a is corrupt\\n\" } }] }\n")
	}
	require.Contains(t, bad, "each: { status: failed, attempts: 2, routed_to_end: true, error_type: \"exit_code\" }")

	code, out, errOut := cli(t, "test", testFile)
	require.Equal(t, 0, code, "the recorded cases pass as recorded:\n%s%s\n%s", out, errOut, text)
	require.Contains(t, out, "2 passed, 0 failed")

	// The elements' results are the run's: element 1's decides the branch.
	require.NoError(t, os.WriteFile(pb, []byte(strings.Replace(recordedLoop, `'part b'`, `'part c'`, 1)), 0o644))
	code, out, _ = cli(t, "test", testFile)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, `step "found_b": expected status completed, got skipped`)
}

// recordedFiles hands files on: extract's file to transform by name,
// split's elements' files (one per element) to load by inputs.from.
const recordedFiles = `metadata: { name: recorded-files }
workload: { dir: "" }
workflow:
  - step: extract
    tool: { kind: shell, workdir: "{{ workload.dir }}/extract", command: "mkdir -p w1 && echo a,b > w1/raw.csv" }
    outputs: { files: [w1/raw.csv] }
  - step: transform
    depends_on: [extract]
    tool: { kind: shell, workdir: "{{ workload.dir }}/transform", command: "wc -c < data/raw.csv" }
    inputs: { files: { data/raw.csv: "{{ steps.extract.files['w1/raw.csv'] }}" } }
  - step: split
    depends_on: [extract]
    loop: { in: "[1, 2]", iterator: n }
    tool: { kind: shell, workdir: "{{ workload.dir }}/split/{{ n }}", command: 'echo "$N" > part.csv', env: { N: "{{ n }}" } }
    outputs: { files: [part.csv] }
  - step: load
    depends_on: [transform, split]
    tool: { kind: shell, workdir: "{{ workload.dir }}/load", command: "cat part.csv 2>/dev/null; ls -R" }
    inputs: { from: [split] }
`

// --record of a run whose steps hand on files records the files each
// step handed on, so that the later steps' inputs find them.
func TestRecordARunThatHandsOnFiles(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	for _, d := range []string{"extract", "transform", "split/1", "split/2", "load"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	pb := writePlaybook(t, dir, "files.yaml", recordedFiles)
	code, agg := runJSON(t, "--id", "recorded-files-1", "--set", "dir="+dir, pb)
	require.Equal(t, 0, code, "%+v", agg.Steps)
	require.Contains(t, agg.Steps["split"].Files, "[1]/part.csv")

	testFile := filepath.Join(dir, "files.test.yaml")
	code, _, errOut := cli(t, "test", "--address", server.Address, "--record", "recorded-files-1", "-o", testFile)
	require.Equal(t, 0, code, errOut)
	b, err := os.ReadFile(testFile)
	require.NoError(t, err)
	text := string(b)
	t.Logf("%s", text)
	require.Regexp(t, `\n      extract: \{ attempts: \[\{ result: \{[^\n]*\}, files: \{ "w1/raw.csv": "" \}(, takes: [^ ]+)? \}\] \}\n`, text)
	require.Contains(t, text, "\n        files: { \"part.csv\": \"\" }\n", "split's elements hand on part.csv each")

	code, out, errOut := cli(t, "test", testFile)
	require.Equal(t, 0, code, "the recorded case passes as recorded:\n%s%s\n%s", out, errOut, text)
	require.Contains(t, out, "1 passed, 0 failed")

	// Without the files, transform's inputs find none.
	require.NoError(t, os.WriteFile(testFile, []byte(strings.Replace(text, `, files: { "w1/raw.csv": "" }`, "", 1)), 0o644))
	code, out, _ = cli(t, "test", testFile)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, `step "transform": expected status completed, got failed`)
}
