package playtest

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

// writeCase writes a playbook and its test file into a fresh directory
// and returns the test file's path.
func writeCase(t *testing.T, playbook, tests string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(playbook), 0o644))
	path := filepath.Join(dir, "p"+Suffix)
	require.NoError(t, os.WriteFile(path, []byte(tests), 0o644))
	return path
}

const touches = `metadata: { name: touches }
workload: { marker: "" }
workflow:
  - step: load
    tool: { kind: shell, command: 'touch "$M"', env: { M: "{{ workload.marker }}" } }
`

// An unmocked process step fails its case and runs nothing; listed under
// real: it runs.
func TestUnmockedProcessStepRunsNothing(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	path := writeCase(t, touches, `cases:
  - name: unmocked
    set: { marker: "`+marker+`" }
    expect: { status: completed }
  - name: real
    set: { marker: "`+marker+`" }
    real: [load]
    expect: { status: completed }
`)
	r := runNamed(t, path, "unmocked")
	require.False(t, r.Passed)
	require.Contains(t, r.Problems, `step "load" would run a shell command: mock it, or list it under real:`)
	require.NoFileExists(t, marker, "no process started")
	require.Empty(t, r.RanForReal)

	r = runNamed(t, path, "real")
	require.True(t, r.Passed, "%v", r.Problems)
	require.FileExists(t, marker, "a step listed under real: runs")
	require.Equal(t, []string{"load"}, r.RanForReal)
}

// Waits, backoffs and deadlines take no wall time: an hour's wait, retries
// 10 minutes apart and a 2-hour deadline that cuts the last wait short.
func TestHoursOfWaitingTakeNoWallTime(t *testing.T) {
	path := writeCase(t, `metadata: { name: slow }
timeout: 2h
workflow:
  - step: settle
    tool: { kind: wait, duration: 1h }
    next: fetch
  - step: fetch
    tool: { kind: http, url: "http://127.0.0.1:9/x" }
    retry: { max_attempts: 4, initial_delay: 10m, backoff_multiplier: 1, max_delay: 10m, jitter: false }
    next: linger
  - step: linger
    tool: { kind: wait, duration: 3h }
  - step: cleanup
    depends_on: [linger]
    always: true
    tool: { kind: noop, result: cleaned }
`, `cases:
  - name: slow
    mocks:
      fetch: { attempts: [{ error: { status_code: 503 } }, { error: { status_code: 503 } }, { result: { status_code: 200 } }] }
    expect:
      status: failed
      steps:
        settle: completed
        fetch: { status: completed, attempts: 3 }
        linger: { status: cancelled, error_type: timeout }
        cleanup: completed
      assert:
        - timeout.after == "2h0m0s"
`)
	s, err := Load(path)
	require.NoError(t, err)
	began := time.Now()
	r := s.RunCase(s.File.Cases[0], Options{})
	took := time.Since(began)
	require.True(t, r.Passed, "%v\n%s", r.Problems, r.Steps)
	require.Less(t, took, time.Second)
	st := r.Aggregate.Steps
	require.Equal(t, 20*time.Minute, st["fetch"].EndedAt.Sub(*st["fetch"].StartedAt), "two backoffs of 10 minutes, in the run's own time")
}

// A malformed test file gets one file:line line per mistake.
func TestMalformedTestFile(t *testing.T) {
	path := writeCase(t, touches, `cases:
  - name: one
    mocks:
      load: { reslut: 1 }
    events:
      - approve: load
      - classify: nosuch
        as: maybe
    expect:
      status: done
      steps:
        gone: completed
  - name: two
    expect:
      assert: ["steps.load.attempts >"]
  - expect: {}
`)
	_, err := Load(path)
	var bad *MalformedError
	require.ErrorAs(t, err, &bad)
	require.Equal(t, []string{
		path + `:4: case "one": unknown key "reslut" in a mock of step "load" (known: attempts, elements, error, files, lost, mocks, outcome, recovery_exit_code, result, takes)`,
		path + `:6: case "one": approve: step "load" is not an approval step`,
		path + `:7: case "one": classify needs as: retry, fail or skip`,
		path + `:7: case "one": classify: touches has no step "nosuch"`,
		path + `:10: case "one": status "done" is not a run status (completed, completed_with_warnings, failed, cancelled)`,
		path + `:12: case "one": expect.steps: touches has no step "gone"`,
		path + `:15: case "two": assert "steps.load.attempts >": unexpected token EOF (1:21)`,
		path + `:16: a case needs name`,
	}, bad.Lines)
}

// A case's trace is each workflow's commands and the results and events
// it was given, in order; the comparison names the first place where a
// workflow's differ, order included.
func TestDeterminismCheck(t *testing.T) {
	s, err := Load("testdata/features/approval.test.yaml")
	require.NoError(t, err)
	sim, err := s.simulate(s.File.Cases[0], Options{}, nil)
	require.NoError(t, err)
	require.Len(t, sim.trace, 7, "%q", sim.trace)
	require.Equal(t, "test: search attributes 1", sim.trace[0], "the run's status: waiting")
	require.Equal(t, "test: timer 1h0m0s", sim.trace[1], "the approval's timeout")
	require.Equal(t, "test: given approve sign_off at 10m0s", sim.trace[2])
	require.Equal(t, "test: search attributes 1", sim.trace[3], "running again")
	require.Regexp(t, `^test: activity deploy RunStep input [0-9a-f]{12}$`, sim.trace[4])
	require.Equal(t, "test: given activity deploy's result", sim.trace[5])
	require.Equal(t, "test: search attributes 2", sim.trace[6], "its outcome and failed steps")
	require.Equal(t, []delivery{{key: "test deploy#0", at: 10 * time.Minute}}, sim.order)
	require.Empty(t, diverged(sim.trace, sim.trace))
	require.Equal(t, "workflow w, at its 1st command or result: the first run issued a, the second issued b",
		diverged([]string{"w: a", "w: b"}, []string{"w: b", "w: a"}))
	require.Equal(t, "workflow w, at its 2nd command or result: the first run issued timer 1h0m0s, the second had nothing more",
		diverged([]string{"v: x", "w: a", "w: timer 1h0m0s"}, []string{"w: a", "v: x"}))
	require.Equal(t, "", diverged([]string{"v: x", "w: a"}, []string{"w: a", "v: x"}), "workflows are compared apart, as their histories replay apart")
}

const parallel = `metadata: { name: parallel }
workflow:
  - step: start
    next: [a, b, c, d]
  - step: a
    tool: { kind: shell, command: "echo a" }
    retry: { max_attempts: 3, initial_delay: 1s, jitter: false }
  - step: b
    tool: { kind: shell, command: "echo b" }
  - step: c
    tool: { kind: shell, command: "echo c" }
    retry: { max_attempts: 3, initial_delay: 1s, jitter: false }
  - step: d
    tool: { kind: shell, command: "echo d" }
  - step: join
    depends_on: [a, b, c, d]
    tool: { kind: noop, result: joined }
`

const parallelCase = `cases:
  - name: four at once
    mocks:
      a: { attempts: [{ error: { exit_code: 1 } }, { result: { stdout: a } }] }
      b: { result: { stdout: b } }
      c: { attempts: [{ error: { exit_code: 1 } }, { error: { exit_code: 1 } }, { result: { stdout: c } }] }
      d: { result: { stdout: d } }
    expect:
      status: completed
`

// A workflow that walks a map to issue its commands issues them in
// another order from one run to the next: the determinism check fails
// the case, where comparing the commands as a set would not; without the
// planted walk the case passes, however its parallel attempts' results
// happen to come back.
func TestDeterminismCheckCatchesReordering(t *testing.T) {
	path := writeCase(t, parallel, parallelCase)
	s, err := Load(path)
	require.NoError(t, err)
	c := s.File.Cases[0]

	runs := 0
	walk := func(flip bool) func(workflow.Context) {
		return func(ctx workflow.Context) {
			if workflow.GetInfo(ctx).WorkflowExecution.ID != rootID {
				return
			}
			waits := map[string]time.Duration{"first": time.Minute, "second": 2 * time.Minute}
			keys := slices.Sorted(maps.Keys(waits))
			runs++
			if flip && runs%2 == 0 {
				slices.Reverse(keys) // the map's walk order changed
			}
			for _, k := range keys {
				workflow.NewTimer(ctx, waits[k])
			}
		}
	}

	r := s.RunCase(c, Options{plant: walk(true)})
	require.False(t, r.Passed)
	require.Equal(t, []string{"determinism: run again with the same results in the same order, the run issued other commands, or in another order " +
		"(a replay of its history would fail): workflow test, at its 1st command or result: the first run issued timer 1m0s, the second issued timer 2m0s"}, r.Problems)

	first, err := s.simulate(c, Options{plant: walk(true)}, nil)
	require.NoError(t, err)
	second, err := s.simulate(c, Options{plant: walk(true)}, first.order)
	require.NoError(t, err)
	require.ElementsMatch(t, first.trace, second.trace, "the same commands, as a set")
	require.NotEmpty(t, diverged(first.trace, second.trace))

	for range 10 {
		r := s.RunCase(c, Options{plant: walk(false)})
		require.True(t, r.Passed, "%v", r.Problems)
	}
}

// A case's workload is its input file's values, then set's on top, over
// the playbook's defaults; a missing input file is a mistake of the file.
func TestCaseWorkload(t *testing.T) {
	path := writeCase(t, `metadata: { name: p }
workload: { rows: 1, name: x }
workflow:
  - step: a
    tool: { kind: noop, result: "{{ workload.rows * 2 }}" }
`, `cases:
  - name: input then set
    input: in.json
    set: { rows: 7 }
    expect:
      assert: [steps.a.result == 14, 'workload.name == "from-input"']
  - name: defaults
    expect:
      assert: [steps.a.result == 2, 'workload.name == "x"']
`)
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(path), "in.json"), []byte(`{"rows": 5, "name": "from-input"}`), 0o644))
	for _, name := range []string{"input then set", "defaults"} {
		r := runNamed(t, path, name)
		require.True(t, r.Passed, "%s: %v", name, r.Problems)
	}
	require.NoError(t, os.Remove(filepath.Join(filepath.Dir(path), "in.json")))
	_, err := Load(path)
	require.EqualError(t, err, path+`:2: case "input then set": input in.json: no such file or directory`)
}

// A send names an event some wait_event step waits for, and a name.
func TestSendNamesAnAwaitedEvent(t *testing.T) {
	path := writeCase(t, touches, `cases:
  - name: one
    events:
      - send: file_landed
      - send:
    expect: {}
`)
	_, err := Load(path)
	var bad *MalformedError
	require.ErrorAs(t, err, &bad)
	require.Equal(t, []string{
		path + `:4: case "one": send: no wait_event step of touches waits for event "file_landed"`,
		path + `:5: case "one": send names the event it sends: send: EVENT`,
	}, bad.Lines)
}

// A sub-playbook mocked whole ends in the order the first run's results
// came, as an activity does: its outcome is held like an attempt's
// result. Before, it ended in its first workflow task, started on a
// goroutine of its own, and on a loaded machine a sibling child's
// activity could beat it in one run and not in the other, and the
// determinism check failed a case that was deterministic.
func TestMockedSubPlaybookFollowsTheFirstRunsOrder(t *testing.T) {
	s, err := Load(filepath.Join("..", "..", "playbooks", "parent.test.yaml"))
	require.NoError(t, err)
	i := slices.IndexFunc(s.File.Cases, func(c *Case) bool { return c.Name == "the load child fails" })
	require.GreaterOrEqual(t, i, 0)
	c := s.File.Cases[i]
	first, err := s.simulate(c, Options{}, nil)
	require.NoError(t, err)
	at := func(key string) int {
		i := slices.IndexFunc(first.order, func(d delivery) bool { return d.key == key })
		require.GreaterOrEqual(t, i, 0, "%s among %v", key, first.order)
		return i
	}
	load, tolerant := at("test.load insert#0"), at("test.tolerant mocked outcome#0")
	given := func(trace []string) []string {
		var children []string
		for _, line := range trace {
			for _, child := range []string{"test.load", "test.tolerant"} {
				if strings.HasPrefix(line, "test: given child "+child+"'s") {
					children = append(children, child)
				}
			}
		}
		return children
	}
	for _, want := range [][]string{{"test.load", "test.tolerant"}, {"test.tolerant", "test.load"}} {
		follow := slices.Clone(first.order)
		if (want[0] == "test.load") != (load < tolerant) {
			follow[load], follow[tolerant] = follow[tolerant], follow[load]
		}
		second, err := s.simulate(c, Options{}, follow)
		require.NoError(t, err)
		require.Equal(t, want, given(second.trace))
	}
}

// A case whose run waits for something none of its events brings fails
// naming what each step waited for, and the event that would end it.
func TestACaseThatNeverDecidesSaysWhatWaits(t *testing.T) {
	path := writeCase(t, `metadata: {name: waits}
use_pending_failed: true
workflow:
  - step: load
    tool: {kind: shell, command: "false"}
  - step: gate
    tool: {kind: approval, message: "ship?"}
  - step: landed
    tool: {kind: wait_event, event: file_landed}
`, `cases:
  - name: c
    mocks:
      load: {error: {exit_code: 1}}
    expect: {status: failed}
`)
	r := runNamed(t, path, "c")
	require.False(t, r.Passed)
	require.Contains(t, strings.Join(r.Problems, "\n"), "it was waiting: step gate waits for approval (an event approve: gate, or reject: gate); "+
		"step landed waits for event file_landed (an event send: file_landed); step load waits in pending_failed for a classification (an event classify: load)")
}

// An assert that names a step the playbook has not is a mistake of the
// test file; a false comparison shows the value it met.
func TestAssertsNameTheirStepsAndShowWhatTheyMet(t *testing.T) {
	pb := "metadata: {name: a}\nworkflow:\n  - step: count\n    tool: {kind: shell, command: \"echo 3\"}\n"
	path := writeCase(t, pb, `cases:
  - name: c
    mocks:
      count: {result: {stdout: "3\n"}}
    expect:
      assert:
        - "steps.nosuch.status == 'completed'"
`)
	_, err := Load(path)
	var bad *MalformedError
	require.ErrorAs(t, err, &bad)
	require.Equal(t, []string{path + `:7: case "c": assert "steps.nosuch.status == 'completed'": a has no step "nosuch"`}, bad.Lines)

	path = writeCase(t, pb, `cases:
  - name: c
    mocks:
      count: {result: {stdout: "3\n"}}
    expect:
      assert:
        - "steps.count.result.json == 2"
        - "steps.count.status in ['failed']"
`)
	r := runNamed(t, path, "c")
	require.False(t, r.Passed)
	require.Contains(t, r.Problems, `assert "steps.count.result.json == 2" (line 7) is false: steps.count.result.json is 3`)
	require.Contains(t, r.Problems, `assert "steps.count.status in ['failed']" (line 8) is false: steps.count.status is "completed"`)
}

// A date in a case's set: or a mocked result is the text written, as
// `run --set` and a step's JSON give it.
func TestACasesDatesAreText(t *testing.T) {
	path := writeCase(t, `metadata: {name: d}
workload: {day: "2026-01-01"}
workflow:
  - step: a
    tool: {kind: shell, command: "true"}
`, `cases:
  - name: c
    set: {day: 2026-01-02}
    mocks:
      a: {result: {stdout: "x", json: {at: 2026-01-03}}}
    expect:
      assert:
        - workload.day == "2026-01-02"
        - steps.a.result.json.at == "2026-01-03"
`)
	r := runNamed(t, path, "c")
	require.True(t, r.Passed, "%v", r.Problems)
}
