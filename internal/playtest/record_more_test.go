package playtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
)

// bigLoop loops over workload.items; report runs when element 2's
// result says so.
const bigLoop = `metadata: { name: big-loop }
workload: { items: [] }
workflow:
  - step: each
    loop: { in: "workload.items", mode: sequential }
    tool: { kind: shell, command: 'echo "$I"', env: { I: "{{ item }}" } }
    retry: { max_attempts: 3 }
    next:
      - when: "steps.each.result[2].stdout == 'two'"
        then: report
  - step: report
    tool: { kind: noop }
`

// recordFromCase runs a case of testFile and records the simulated run as
// a case of out, as --record does a real run's.
func recordFromCase(t *testing.T, testFile, name, out string) []byte {
	t.Helper()
	r := runNamed(t, testFile, name)
	require.True(t, r.Passed, "%v", r.Problems)
	s, err := Load(testFile)
	require.NoError(t, err)
	var c *Case
	for _, x := range s.File.Cases {
		if x.Name == name {
			c = x
		}
	}
	pb := filepath.Join(filepath.Dir(testFile), "p.yaml")
	src, err := os.ReadFile(pb)
	require.NoError(t, err)
	in := contract.Input{File: pb, BaseDir: filepath.Dir(pb), Source: string(src), Workload: c.Set, LogicalTime: c.LogicalTime}
	text, err := Record(in, r.Aggregate, "recorded", out, "")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(out, text, 0o644))
	return text
}

// A loop of 1,500 elements that each gave another result is recorded
// with the first 1,000 of them by index, the others taking the step's
// own mock; an element that failed an attempt is written wherever it is.
// The recorded case passes.
func TestRecordBoundsALoopsElements(t *testing.T) {
	const n = 1500
	items := make([]string, n)
	var mocks strings.Builder
	for i := range n {
		items[i] = fmt.Sprint(i)
		switch i {
		case 2:
			mocks.WriteString("          2: { result: { stdout: two } }\n")
		case 1400:
			mocks.WriteString("          1400: { attempts: [{ error: { exit_code: 1, stderr: late } }, { result: { stdout: \"1400\" } }] }\n")
		default:
			fmt.Fprintf(&mocks, "          %d: { result: { stdout: \"%d\" } }\n", i, i)
		}
	}
	text := recordedPasses(t, bigLoop, "    set: { items: ["+strings.Join(items, ", ")+"] }\n"+
		"    mocks:\n      each:\n        result: { stdout: none }\n        elements:\n"+mocks.String()+
		"    expect:\n      steps:\n        each: { status: completed, attempts: 2 }\n        report: { status: completed }\n")
	// Element 0 gave the most common result (each gave its own, and it
	// comes first): it is the step's own, and element 0 is written for the
	// time the step took.
	has(t, text, "      each:\n        result: {\"exit_code\":0,\"json\":0,\"stderr\":\"\",\"stdout\":\"0\"}\n        elements:\n")
	has(t, text, "          # 498 more elements gave other results: they are not written, and take the step's own mock\n")
	has(t, text, "\n          0: { result: {\"exit_code\":0,\"json\":0,\"stderr\":\"\",\"stdout\":\"0\"}, takes: ")
	has(t, text, "\n          2: { result: {\"exit_code\":0,\"json\":null,\"stderr\":\"\",\"stdout\":\"two\"} }\n")
	has(t, text, "\n          1000: { result: ")
	require.NotContains(t, text, "\n          1001: ", "past the bound")
	has(t, text, "\n          1400: { attempts: [{ error: { exit_code: 1, stderr: \"late\" } }, { result: {\"exit_code\":0,\"json\":1400,\"stderr\":\"\",\"stdout\":\"1400\"} }] }\n")
	require.Equal(t, 1+1000+1+1, strings.Count(text, "\n          "), "element 0, 1,000 results, element 1400, and the line that says what is left out")
}

// recordedPasses writes playbook as p.yaml and a test file whose one
// case, source, is sourceCase (its lines after the name), records the
// simulated run of that case, and runs the recorded case, which passes:
// the recorded text.
func recordedPasses(t *testing.T, playbook, sourceCase string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(playbook), 0o644))
	source := filepath.Join(dir, "source"+Suffix)
	require.NoError(t, os.WriteFile(source, []byte("playbook: p.yaml\ncases:\n  - name: source\n"+sourceCase), 0o644))
	out := filepath.Join(dir, "p"+Suffix)
	text := string(recordFromCase(t, source, "source", out))
	r := runNamed(t, out, "recorded")
	require.True(t, r.Passed, "%v; the recorded case begins:\n%.2000s", r.Problems, text)
	return text
}

// has fails the test when text does not hold part, without printing all
// of a long text.
func has(t *testing.T, text, part string) {
	t.Helper()
	if !strings.Contains(text, part) {
		t.Fatalf("the recorded case has no %q; it begins:\n%.2000s", part, text)
	}
}

// A loop whose elements all gave the same result is one line however
// long it is.
func TestRecordALoopOfLikeElements(t *testing.T) {
	text := recordedPasses(t, bigLoop, "    set: { items: [a, b, c] }\n"+
		"    mocks:\n      each: { result: { stdout: same } }\n    expect: { status: completed }\n")
	require.Contains(t, text, "      each:\n        result: {\"exit_code\":0,\"json\":null,\"stderr\":\"\",\"stdout\":\"same\"}\n    expect:")
}

// A loop cancelled while an element ran is recorded with that element
// running a day past the cancel, and the recorded case passes.
func TestRecordACancelledLoop(t *testing.T) {
	text := recordedPasses(t, bigLoop, "    set: { items: [a, b, c] }\n"+
		"    mocks:\n      each:\n        result: { stdout: done }\n        elements:\n          1: { result: { stdout: slow }, takes: 1h }\n"+
		"    events:\n      - { cancel: \"enough\", after: 10m }\n"+
		"    expect:\n      status: cancelled\n      steps:\n        each: { status: cancelled }\n")
	has(t, text, "      each:\n        result: null\n        elements:\n          1: { result: null, takes: 24h10m0s }\n")
	has(t, text, "      - { cancel: \"enough\", after: 10m0s }\n")
}

// The element that takes a loop's time takes no longer than the step's
// timeout, which is each element's: three elements of 40 minutes made a
// loop of two hours, and none was killed at its hour.
func TestRecordALoopLongerThanItsTimeout(t *testing.T) {
	text := recordedPasses(t, strings.Replace(bigLoop, "    retry:", "    timeout: 1h\n    retry:", 1), "    set: { items: [a, b, c] }\n"+
		"    mocks:\n      each:\n        result: { stdout: done }\n        elements:\n"+
		"          0: { result: { stdout: done }, takes: 40m }\n          1: { result: { stdout: done }, takes: 40m }\n          2: { result: { stdout: done }, takes: 40m }\n"+
		"    expect: { status: completed }\n")
	has(t, text, "\n          0: { result: {\"exit_code\":0,\"json\":null,\"stderr\":\"\",\"stdout\":\"done\"}, takes: 1h0m0s }\n")
}

// A step polled with retry_when records each attempt it polled past as
// the result it gave, not as an error of type retry_when: the recorded
// case polls as the run did, and passes.
func TestRecordAPolledStep(t *testing.T) {
	text := recordedPasses(t, `metadata: { name: poll }
workflow:
  - step: poll
    tool: { kind: shell, command: 'cat status' }
    retry: { max_attempts: 5, initial_delay: 1s, retry_when: "result.stdout != 'done'" }
`, `    mocks:
      poll: { attempts: [{ result: { stdout: waiting } }, { result: { stdout: waiting } }, { result: { stdout: done } }] }
    expect:
      steps:
        poll: { status: completed, attempts: 3 }
`)
	has(t, text, `poll: { attempts: [{ result: {"exit_code":0,"json":null,"stderr":"","stdout":"waiting"} }, { result: {"exit_code":0,"json":null,"stderr":"","stdout":"waiting"} }, { result: {"exit_code":0,"json":null,"stderr":"","stdout":"done"}, takes: `)
}

// A step killed at its timeout, judged by an exit-code rule for 143, is
// recorded with its exit code: the recorded case judges it alike.
func TestRecordAStepKilledAtItsTimeout(t *testing.T) {
	text := recordedPasses(t, killedAtItsTimeout, `    mocks:
      s: {result: {stdout: ""}, takes: 5s}
    expect:
      steps: {s: {status: failed, attempts: 2, recovery: max_retries_exceeded}}
`)
	has(t, text, "exit_code: 143")
}

// The event wait_event steps got is recorded as one send, with its data;
// an approval's reason goes with it: the recorded case passes.
func TestRecordTheEventsARunGot(t *testing.T) {
	text := recordedPasses(t, `metadata: {name: p}
workflow:
  - step: landed
    tool: {kind: wait_event, event: file_landed, timeout: 1h}
    next: ask
  - step: ask
    tool: {kind: approval}
    next: load
  - step: also
    tool: {kind: wait_event, event: file_landed, timeout: 1h}
  - step: load
    tool: {kind: noop, result: "{{ steps.landed.result.data.path }}"}
`, `    events:
      - {send: file_landed, after: 10m, data: {path: /in/x.csv}, by: sensor}
      - {approve: ask, after: 20m, by: ana, reason: looks right}
    expect:
      status: completed
      assert: ['steps.load.result == "/in/x.csv"']
`)
	has(t, text, `send: "file_landed", after: 10m0s, by: "sensor", data: {"path":"/in/x.csv"}`)
	require.Equal(t, 1, strings.Count(text, "send: "), "one send completed both steps that waited for it")
	has(t, text, `reason: "looks right"`)
}
