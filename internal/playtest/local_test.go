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

// A local step's retry beside an ordinary step: the local attempt's end
// and the ordinary step's result reached the workflow in either order
// from one run to the next, and the determinism check, which held only
// activities' results to the first run's order, failed most runs of the
// case ("the first run was given activity remote's result, the second
// issued local retry timer"). Each of ten runs of the case passes.
func TestLocalRetryBesideAnActivityIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(`metadata: {name: p}
workflow:
  - step: flaky
    local: true
    tool: {kind: shell, command: "true"}
    retry: {max_attempts: 3, initial_delay: 100ms}
  - step: remote
    tool: {kind: shell, command: "true"}
`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.test.yaml"), []byte(`cases:
  - name: local retry beside a remote step
    mocks:
      flaky: {attempts: [{error: {exit_code: 1}}, {result: {stdout: ""}}]}
      remote: {result: {stdout: ""}}
    expect:
      status: completed
      steps: {flaky: {status: completed, attempts: 2}}
`), 0o644))
	for i := range 10 {
		r := runNamed(t, filepath.Join(dir, "p.test.yaml"), "local retry beside a remote step")
		require.True(t, r.Passed, "run %d: %v\n%s", i+1, r.Problems, r.Steps)
	}
}

// A mocked attempt that takes longer than its step's timeout fails with
// execution_timeout when the timeout passes, as a real one is killed; the
// retry decision sees it as any failure.
func TestAMockThatOverrunsItsTimeoutTimesOut(t *testing.T) {
	dir := t.TempDir()
	for _, local := range []string{"false", "true"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(`metadata: {name: p}
local: `+local+`
workflow:
  - step: slow
    timeout: 1s
    retry: {max_attempts: 2, jitter: false}
    tool: {kind: shell, command: "sleep 2"}
`), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "p.test.yaml"), []byte(`cases:
  - name: the first attempt overruns
    mocks:
      slow: {attempts: [{result: {stdout: ""}, takes: 2s}, {result: {stdout: "ok"}, takes: 500ms}]}
    expect:
      status: completed
      steps: {slow: {status: completed, attempts: 2}}
      assert:
        - 'steps.slow.attempt_errors[0].error.type == "execution_timeout"'
        - 'steps.slow.attempt_errors[0].error.message == "attempt 1 ran past its timeout of 1s and was killed"'
        - 'date(steps.slow.ended_at) - date(steps.slow.started_at) == duration("2.5s")'
  - name: every attempt overruns
    mocks:
      slow: {result: {stdout: ""}, takes: 1m}
    expect:
      status: failed
      steps: {slow: {status: failed, attempts: 2, error_type: execution_timeout}}
`), 0o644))
		for _, name := range []string{"the first attempt overruns", "every attempt overruns"} {
			r := runNamed(t, filepath.Join(dir, "p.test.yaml"), name)
			require.True(t, r.Passed, "local: %s, %s: %v\n%s", local, name, r.Problems, r.Steps)
		}
	}
}

// killedAtItsTimeout is a step of a 1s timeout whose process runs 5s,
// with an exit-code rule that retries the 143 of a process killed once.
const killedAtItsTimeout = `metadata: {name: p}
failure_handlers: [{name: kill, rules: [{exit_codes: [143], max_retries: 1}]}]
workflow:
  - step: s
    timeout: 1s
    failure_handler: kill
    tool: {kind: shell, command: "sleep 5"}
`

// A mocked process that overruns its timeout exits 143 as a killed one
// does, and an exit-code rule for 143 judges it as in a real run.
func TestAMockKilledAtItsTimeoutExits143(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(killedAtItsTimeout), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.test.yaml"), []byte(`cases:
  - name: killed twice
    mocks:
      s: {result: {stdout: ""}, takes: 5s}
    expect:
      status: failed
      steps: {s: {status: failed, attempts: 2, error_type: execution_timeout, recovery: max_retries_exceeded}}
`), 0o644))
	r := runNamed(t, filepath.Join(dir, "p.test.yaml"), "killed twice")
	require.True(t, r.Passed, "%v\n%s", r.Problems, r.Steps)
}
