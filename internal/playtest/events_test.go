package playtest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const guarded = `metadata: { name: guarded }
timeout: 2h
workflow:
  - step: lock
    tool: { kind: shell, command: "lock" }
    next: work
  - step: work
    tool: { kind: wait, duration: 3h }
  - step: unlock
    depends_on: [lock, work]
    always: true
    tool: { kind: noop, result: "{{ run.timed_out }}" }
`

// A case's deadline event makes the run's deadline pass at that moment of
// its clock: what runs is cancelled then, cleanup still runs, and the
// aggregate reads as the playbook's own deadline passing.
func TestDeadlineEvent(t *testing.T) {
	path := writeCase(t, guarded, `cases:
  - name: at 90 minutes
    mocks:
      lock: { result: { stdout: locked } }
    events:
      - deadline: true
        after: 90m
    expect:
      status: failed
      steps:
        work: { status: cancelled, error_type: timeout }
        unlock: completed
      assert:
        - steps.unlock.result == true
        - timeout.after == "2h0m0s"
  - name: its own
    mocks:
      lock: { result: { stdout: locked } }
    expect:
      status: failed
      steps:
        work: { status: cancelled, error_type: timeout }
`)
	for name, want := range map[string]time.Duration{"at 90 minutes": 90 * time.Minute, "its own": 2 * time.Hour} {
		r := runNamed(t, path, name)
		require.True(t, r.Passed, "%s: %v\n%s", name, r.Problems, r.Steps)
		work := r.Aggregate.Steps["work"]
		require.Equal(t, want, work.EndedAt.Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), name)
	}

	// A playbook without a timeout of its own: a deadline inherited from a
	// parent would pass the same way.
	path = writeCase(t, `metadata: { name: open }
workflow:
  - step: work
    tool: { kind: wait, duration: 3h }
`, `cases:
  - name: c
    events: [{ deadline: true, after: 30m }]
    expect:
      status: failed
      steps:
        work: { status: cancelled, error_type: timeout }
      assert: ['timeout.after == "30m0s"']
`)
	r := runNamed(t, path, "c")
	require.True(t, r.Passed, "%v\n%s", r.Problems, r.Steps)
}

// A deadline event that cannot be is a mistake of the test file.
func TestDeadlineEventMalformed(t *testing.T) {
	path := writeCase(t, guarded, `cases:
  - name: c
    events:
      - deadline: true
      - deadline: false
        after: 1m
      - deadline: true
        after: 2h
      - deadline: true
        on_start: work
        after: 1m
    expect: { status: failed }
`)
	_, err := Load(path)
	var bad *MalformedError
	require.ErrorAs(t, err, &bad)
	require.Equal(t, []string{
		path + `:4: case "c": deadline needs after: D, when the run's deadline passes from its start (and no on_start)`,
		path + `:5: case "c": deadline is true (the run's deadline passes), not "false"`,
		path + `:7: case "c": deadline: a run's deadline passes once`,
		path + `:7: case "c": deadline: the playbook's own deadline (timeout: 2h0m0s) passes first: after must be earlier`,
		path + `:9: case "c": deadline needs after: D, when the run's deadline passes from its start (and no on_start)`,
	}, bad.Lines)
}

// An approval or an event sent as soon as its step waits reaches a step
// with no timeout: nothing but the run's waiting status tells the test
// the step waits (the run ended at its execution timeout, "deadline
// exceeded", in most runs of such a case). Each case passes every time.
func TestEventsReachAWaitWithoutATimeout(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
		return path
	}
	write("ask.yaml", "metadata: {name: ask}\nworkflow:\n  - step: ask\n    tool: {kind: approval}\n")
	write("land.yaml", "metadata: {name: land}\nworkflow:\n  - step: landed\n    tool: {kind: wait_event, event: file_landed}\n    next: load\n"+
		"  - step: load\n    tool: {kind: noop, result: \"{{ steps.landed.result.data.path }}\"}\n")
	cases := map[string]string{
		write("ask.test.yaml", "cases:\n  - name: approved\n    events: [{approve: ask}]\n    expect: {status: completed}\n"):                                                                           "approved",
		write("land.test.yaml", "cases:\n  - name: landed\n    events: [{send: file_landed, data: {path: /x}}]\n    expect:\n      status: completed\n      assert: ['steps.load.result == \"/x\"']\n"): "landed",
	}
	for file, name := range cases {
		for i := range 10 {
			r := runNamed(t, file, name)
			require.True(t, r.Passed, "%s, run %d: %v", name, i+1, r.Problems)
		}
	}
}
