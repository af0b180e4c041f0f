package submit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"playbook/interpreter/spec"

	"github.com/stretchr/testify/require"
)

// The checks a submission makes (ParseStrict), each pinned to its text.
func TestParseStrictErrors(t *testing.T) {
	dir := t.TempDir()
	cases := parseStrictCases(dir)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseStrict("flows/x.yaml", []byte(tc.src), dir)
			require.Error(t, err)
			require.Equal(t, tc.want, err.Error())
		})
	}
}

// parseStrictCases are malformed playbooks and ParseStrict's error for
// each, for files in dir; schema_test.go checks them against the JSON
// Schema too.
func parseStrictCases(dir string) []struct{ name, src, want string } {
	return []struct{ name, src, want string }{
		{"undeclared workload key", `
metadata: {name: x}
workload: {rows: 3}
workflow:
  - step: clean
    tool: {kind: shell, command: 'rm -rf "$WORKDIR"/*', env: {WORKDIR: "{{ workload.work_dir }}"}}
`, `flows/x.yaml:6: step "clean": tool: "workload.work_dir": reads workload.work_dir, which the workload section does not declare (declared: rows)`},
		{"no workload section", `
metadata: {name: x}
workflow:
  - step: a
    tool: {kind: noop, result: "{{ workload.url }}"}
`, `flows/x.yaml:5: step "a": tool: "workload.url": reads workload.url, which the workload section does not declare (it declares no keys)`},
		{"type error", `
metadata: {name: x}
workload: {rows: 3}
workflow:
  - step: a
    next:
      - when: 'workload.rows > "zero"'
        then: [b]
  - step: b
`, `flows/x.yaml:7: step "a": when: "workload.rows > \"zero\"": invalid operation: > (mismatched types int and string) (1:15)`},
		{"when is not a bool", `
metadata: {name: x}
workload: {rows: 3}
workflow:
  - step: a
    next:
      - when: 'workload.rows'
        then: [b]
  - step: b
`, `flows/x.yaml:7: step "a": when: "workload.rows": expected bool, but got int`},
		{"misspelt step field", `
metadata: {name: x}
workflow:
  - step: transform
    tool: {kind: shell, command: "echo '{\"rows\": 1}'"}
    next:
      - when: "steps.transform.reslt.rows > 0"
        then: [load]
  - step: load
`, `flows/x.yaml:7: step "transform": when: "steps.transform.reslt.rows > 0": unknown field reslt (1:17)`},
		{"misspelt result field of a shell step", `
metadata: {name: x}
workflow:
  - step: extract
    tool: {kind: shell, command: "true"}
  - step: load
    depends_on: [extract]
    tool: {kind: noop, result: "{{ steps.extract.result.exitcode }}"}
`, `flows/x.yaml:8: step "load": tool: "steps.extract.result.exitcode": unknown field exitcode (1:22): a shell step's result is {exit_code, json, stderr, stdout}; write steps.extract.result.json.exitcode for a field of the JSON it gave`},
		{"step not upstream", `
metadata: {name: x}
workflow:
  - step: extract
    tool: {kind: noop, result: 1}
  - step: audit
    tool: {kind: noop, result: "{{ steps.extract.result }}"}
`, `flows/x.yaml:7: step "audit": tool: "steps.extract.result": reads steps.extract, but step "extract" is not upstream of "audit" (it would read null): make it a predecessor through next or depends_on`},
		{"downstream step", `
metadata: {name: x}
workflow:
  - step: a
    tool: {kind: noop}
    next:
      - when: "steps.b.status == 'completed'"
        then: [b]
  - step: b
`, `flows/x.yaml:7: step "a": when: "steps.b.status == 'completed'": reads steps.b, but step "b" is not upstream of "a" (it would read null): make it a predecessor through next or depends_on`},
		{"a tool reading its own step", `
metadata: {name: x}
workflow:
  - step: a
    tool: {kind: noop, result: "{{ steps.a.attempts }}"}
`, `flows/x.yaml:5: step "a": tool: "steps.a.attempts": reads steps.a, the step itself, which has not run yet (its own next, retry_when and stop_when may read it)`},
		{"missing recovery script", `
metadata: {name: x}
failure_handlers:
  - name: flaky_io
    rules: [{exit_codes: [10], recovery_script: ./scripts/remount.sh}]
workflow:
  - step: a
    tool: {kind: shell, command: "true"}
    failure_handler: flaky_io
`, `flows/x.yaml:5: failure handler "flaky_io": recovery_script ./scripts/remount.sh does not exist (looked for ` + filepath.Join(dir, "scripts/remount.sh") + `)`},
		{"empty workflow", `
metadata: {name: x}
workflow: []
`, `flows/x.yaml:3: workflow has no steps: a run would do nothing`},
		{"unquoted template", `
metadata: {name: x}
workflow:
  - step: a
    tool:
      kind: shell
      command: 'curl "$URL"'
      env:
        URL: {{ workload.url }}
`, `flows/x.yaml:9: step "a": env.URL: a template must be quoted: write "{{ workload.url }}" (unquoted, YAML reads {{ }} as a mapping)`},
		{"unquoted template with text after it", `
metadata: {name: x}
workflow:
  - step: a
    tool:
      kind: noop
      result: {{ workload.url }}/data
`, `flows/x.yaml:7: a template must be quoted: write "{{ workload.url }}/data" (unquoted, YAML reads {{ }} as a mapping)`},
		{"tab", "metadata: {name: x}\nworkflow:\n  - step: a\n\ttool: {kind: noop}\n", `flows/x.yaml:4: tabs cannot indent YAML: indent with spaces`},
		{"retry_when reads the attempt's result shape", `
metadata: {name: x}
workflow:
  - step: poll
    tool: {kind: http, url: "http://127.0.0.1:1"}
    retry: {max_attempts: 3, retry_when: "result.status == 202"}
`, `flows/x.yaml:6: step "poll": retry.retry_when: "result.status == 202": unknown field status (1:8)`},
		{"retry error has no details", `
metadata: {name: x}
workflow:
  - step: a
    tool: {kind: shell, command: "true"}
    retry: {max_attempts: 3, stop_when: "error.details != nil"}
`, `flows/x.yaml:6: step "a": retry.stop_when: "error.details != nil": unknown field details (1:7)`},
		{"loop index is an int", `
metadata: {name: x}
workflow:
  - step: a
    loop: {in: "[1, 2]"}
    tool: {kind: noop, result: "{{ loop.index + 'x' }}"}
`, `flows/x.yaml:6: step "a": tool: "loop.index + 'x'": invalid operation: + (mismatched types int and string) (1:12)`},
	}
}

// validate reports every error of a file at once, one line each, in file
// order: the decoder's, the graph's and the submission's own.
func TestParseStrictReportsEveryError(t *testing.T) {
	src := `
metadata: {name: x}
workload: {rows: 3}
failure_mode: abort
workflow:
  - step: a
    tool: {kind: noop, result: "{{ workload.nosuch }}"}
    next:
      - when: "workload.rows"
        then: [b]
  - step: b
    nxt: c
  - step: c
    tool: {kind: bash}
`
	_, err := ParseStrict("x.yaml", []byte(src), "")
	require.EqualError(t, err, `x.yaml:4: failure_mode must be continue, stop or cancel, not "abort"
x.yaml:7: step "a": tool: "workload.nosuch": reads workload.nosuch, which the workload section does not declare (declared: rows)
x.yaml:9: step "a": when: "workload.rows": expected bool, but got int
x.yaml:12: step "b": unknown key "nxt" in a step (known: allow_failure, always, depends_on, desc, failure_handler, heartbeat_timeout, inputs, local, loop, lost_attempts, next, on_cancel, on_failure, on_lost, outputs, queue, reads, retries, retry, retry_delay, step, success_when, timeout, tool)
x.yaml:14: step "c": unknown tool kind "bash" (one of: approval, fail, http, noop, playbook, python, shell, wait, wait_event)`)

	// Once the file decodes, graph and expression errors come together.
	src = `
metadata: {name: x}
workload: {rows: 3}
workflow:
  - step: a
    tool: {kind: noop, result: "{{ workload.nosuch }}"}
    next:
      - when: "workload.rows"
        then: [b]
  - step: b
    next: cc
  - step: c
    tool: {kind: noop, result: "{{ steps.b.result }}"}
`
	_, err = ParseStrict("x.yaml", []byte(src), "")
	require.EqualError(t, err, `x.yaml:6: step "a": tool: "workload.nosuch": reads workload.nosuch, which the workload section does not declare (declared: rows)
x.yaml:8: step "a": when: "workload.rows": expected bool, but got int
x.yaml:11: step "b": next names unknown step "cc" (did you mean "c"?)
x.yaml:13: step "c": tool: "steps.b.result": reads steps.b, but step "b" is not upstream of "c" (it would read null): make it a predecessor through next or depends_on`)
}

// What the rules allow: a step's own next and retry expressions read the
// step; end and notify read every step; loops see their iterator; nested
// workload keys and untyped defaults read freely; null values are fine.
func TestParseStrictAccepts(t *testing.T) {
	src := `
metadata: {name: x}
workload: {rows: 3, url: "http://x", cfg: {depth: 1}, anything: null, list: [], opts: {}}
notify:
  on_failure: {webhook: "{{ workload.url }}/{{ steps.b.status }}"}
workflow:
  - step: a
    tool: {kind: shell, command: "echo hi"}
    retry: {max_attempts: 2, retry_when: "result.exit_code == 75 || exit_code == 75", stop_when: "steps.a.attempts > 1 && error.type == 'x'"}
    next:
      - when: "steps.a.result.json.rows > workload.rows && workload.cfg.depth > 0 && workload.cfg.extra.more != nil"
        then: [b]
      - else: [c]
  - step: b
    loop: {in: "workload.list", iterator: row}
    tool: {kind: http, url: "{{ workload.url }}/{{ row.id }}/{{ loop.index }}", body: "{{ steps.a.result.stdout }}"}
  - step: c
    tool: {kind: python, code: "def main(**a): return a", args: {x: "{{ workload.anything.deep }}", y: "{{ workload.opts.k }}"}}
  - step: d
    depends_on: [b, c]
    tool: {kind: noop, result: "{{ steps.c.result.whatever }} {{ steps.b.result[0].status_code }} {{ steps.a.error.message }}"}
  - step: end
    success_when: "failed_steps_count == 0 || steps.d.status == 'completed'"
    tool: {kind: noop, result: "{{ steps.b.result }} {{ total_steps }}"}
`
	_, err := ParseStrict("x.yaml", []byte(src), "")
	require.NoError(t, err)
}

// The workflow re-parses a frozen playbook with Parse, which the new checks
// never reach: a playbook submitted before them still runs and replays.
func TestParseStaysLenient(t *testing.T) {
	src := []byte(`
metadata: {name: x}
workflow:
  - step: a
    tool: {kind: noop, result: "{{ workload.work_dir }}"}
  - step: b
    tool: {kind: noop, result: "{{ steps.a.result }}"}
`)
	_, err := spec.Parse("x.yaml", src)
	require.NoError(t, err)
	_, err = ParseStrict("x.yaml", src, "")
	require.Error(t, err)
	_, err = spec.Parse("x.yaml", []byte("metadata: {name: x}\nworkflow: []\n"))
	require.NoError(t, err)
}

func TestCheckOverrides(t *testing.T) {
	pb, err := spec.Parse("x.yaml", []byte(`
metadata: {name: x}
workload: {rows: 3, ratio: 0.5, name: a, on: false, list: [1], cfg: {depth: 1}, free: null}
workflow:
  - step: a
`))
	require.NoError(t, err)
	got, err := CheckOverrides(pb, map[string]any{
		"rows": 3.0, "ratio": 2, "name": 2024, "on": true, "list": []any{"x"},
		"cfg": map[string]any{"depth": 2.0, "new": "ok"}, "free": map[string]any{"a": 1},
	})
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"rows": 3, "ratio": 2.0, "name": "2024", "on": true, "list": []any{"x"},
		"cfg": map[string]any{"depth": 2, "new": "ok"}, "free": map[string]any{"a": 1},
	}, got)

	_, err = CheckOverrides(pb, map[string]any{"nosuch": 1})
	require.EqualError(t, err, `x.yaml: workload key "nosuch" is not declared (declared: cfg, free, list, name, on, ratio, rows)`)
	_, err = CheckOverrides(pb, map[string]any{"rows": 3.5, "on": "yes", "cfg": map[string]any{"depth": "deep"}})
	require.EqualError(t, err, `x.yaml: workload.cfg.depth must be a whole number (its default is 1), not "deep"; workload.on must be true or false (its default is false), not "yes"; workload.rows must be a whole number (its default is 3), not 3.5`)
}

// A sub-playbook step may only set keys the sub-playbook declares.
func TestBundleChecksChildWorkload(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644))
	}
	write("child.yaml", "metadata: {name: child}\nworkload: {rows: 0}\nworkflow:\n  - step: a\n    tool: {kind: noop, result: \"{{ workload.rows }}\"}\n")
	write("parent.yaml", `metadata: {name: parent}
workflow:
  - step: prepare
    tool: {kind: noop, result: 3}
  - step: call
    depends_on: [prepare]
    tool: {kind: playbook, path: child.yaml, workload: {rows: "{{ steps.prepare.result }}", batch: 2}}
  - step: again
    tool: {kind: playbook, path: child.yaml, workload: {rows: many}}
`)
	read := func(abs string) ([]byte, error) { return os.ReadFile(abs) }
	_, err := LoadBundle(filepath.Join(dir, "parent.yaml"), read)
	p := filepath.Join(dir, "parent.yaml")
	c := filepath.Join(dir, "child.yaml")
	require.EqualError(t, err, p+`:7: step "call": workload: `+c+`: workload key "batch" is not declared (declared: rows)
`+p+`:9: step "again": workload: `+c+`: workload.rows must be a whole number (its default is 0), not "many"`)

	write("parent.yaml", "metadata: {name: parent}\nworkflow:\n  - step: call\n    tool: {kind: playbook, path: child.yaml, workload: {rows: 2.0}}\n")
	_, err = LoadBundle(filepath.Join(dir, "parent.yaml"), read)
	require.NoError(t, err)
}

// One pass tells every mistake of a file, whatever phase finds it: an
// unknown key (decoding), an unknown next target (the graph), a condition
// that is not a boolean and a loop over a number (the types); a step whose
// keys did not decode is not reported again by the later phases.
func TestEveryMistakeInOnePass(t *testing.T) {
	_, err := ParseStrict("four.yaml", []byte(`metadata: {name: four}
workload: {n: 3}
workflow:
  - step: a
    tool: {kind: shell, comand: "true"}
    next: [b]
  - step: b
    tool: {kind: noop}
    next: nowhere
  - step: c
    tool: {kind: noop}
    next:
      - when: "workload.n + 1"
        then: [d]
  - step: d
    loop: {in: "workload.n"}
    tool: {kind: noop}
`), "")
	require.EqualError(t, err, `four.yaml:5: step "a": unknown key "comand" in shell tool (known: command, env, kind, workdir)
four.yaml:9: step "b": next names unknown step "nowhere"
four.yaml:13: step "c": when: "workload.n + 1": expected bool, but got int
four.yaml:16: step "d": loop.in: "workload.n": gives a number (int), not a list: a loop runs over a list (a YAML list, an expression giving one, or a range such as 1..10)`)
}

// A loop's list: an expression must give one, and a range of two numbers
// is held to the bound on a loop's length before any run starts.
func TestLoopSourcesAreLists(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"1..200000"`, `l.yaml:5: step "a": loop.in: "1..200000": loop gives 200000 elements, over the limit of 100000 elements per loop`},
		{`"'abc'"`, `l.yaml:5: step "a": loop.in: "'abc'": gives a string, not a list: a loop runs over a list (a YAML list, an expression giving one, or a range such as 1..10)`},
		{`"0..9223372036854775807"`, `l.yaml:5: step "a": loop.in: "0..9223372036854775807": loop gives 9223372036854775808 elements, over the limit of 100000 elements per loop`},
		{`"workload.names"`, ``},
		{`"1..100000"`, ``},
		{`"filter(workload.names, # != 'x')"`, ``},
	} {
		_, err := ParseStrict("l.yaml", []byte(`metadata: {name: l}
workload: {names: [a, b]}
workflow:
  - step: a
    loop: {in: `+tc.in+`}
    tool: {kind: noop}
`), "")
		if tc.want == "" {
			require.NoError(t, err, tc.in)
		} else {
			require.EqualError(t, err, tc.want, tc.in)
		}
	}
}

// A section that does not decode is told once: the steps that name its
// handlers, or read its workload, are not told again that they are unknown.
func TestABrokenSectionIsToldOnce(t *testing.T) {
	_, err := ParseStrict("b.yaml", []byte(`metadata: {name: b}
workload: [not, a, mapping]
failure_handlers:
  - name: h
    rules:
      - {exit_codes: [3], bogus: 1}
workflow:
  - step: a
    tool: {kind: shell, command: 'echo "$X"', env: {X: "{{ workload.x }}"}}
    failure_handler: h
`), "")
	require.EqualError(t, err, `b.yaml:2: workload must be a mapping
b.yaml:6: unknown key "bogus" in an exit-code rule (known: exit_codes, match_all_exit_codes, max_retries, recovery_script)`)
}

// A step whose tool has an unknown key still has its next checked: both
// mistakes, and the file's others, are told in one pass.
func TestAStepsEveryMistakeInOnePass(t *testing.T) {
	_, err := ParseStrict("four.yaml", []byte(`metadata: {name: four}
workload: {count: 3, name: x}
workflow:
  - step: fetch
    tool: {kind: shell, command: "echo hi", timeout_s: 5}
    next: trasnform
  - step: compare
    tool: {kind: noop, result: 1}
    next:
      - when: "workload.name > 2"
        then: [each]
  - step: each
    loop: {in: "workload.count"}
    tool: {kind: noop, result: "{{ item }}"}
`), "")
	require.EqualError(t, err, `four.yaml:5: step "fetch": unknown key "timeout_s" in shell tool (known: command, env, kind, workdir)
four.yaml:6: step "fetch": next names unknown step "trasnform"
four.yaml:10: step "compare": when: "workload.name > 2": invalid operation: > (mismatched types string and int) (1:15)
four.yaml:13: step "each": loop.in: "workload.count": gives a number (int), not a list: a loop runs over a list (a YAML list, an expression giving one, or a range such as 1..10)`)
}

// A loop whose block did not decode is still a loop to the steps that
// read it: its mistake is told once, and a correct map over its result
// is not refused as a map over one element's result.
func TestABrokenLoopIsToldOnce(t *testing.T) {
	_, err := ParseStrict("l.yaml", []byte(`metadata: {name: l}
workload: {parallel: 3, items: [1, 2]}
workflow:
  - step: each
    loop: {in: "workload.items", mode: parallel, max_in_flight: "{{ workload.parallel }}"}
    tool: {kind: shell, command: "echo $X", env: {X: "{{ item }}"}}
  - step: sum
    depends_on: [each]
    tool: {kind: noop, result: "{{ map(steps.each.result, .exit_code) }}"}
`), "")
	require.EqualError(t, err, `l.yaml:5: step "each": loop.max_in_flight must be a whole number, not "{{ workload.parallel }}"`)
}

// A field a process's result does not have is suggested as a field of the
// JSON the process printed.
func TestAResultFieldSuggestsItsJSON(t *testing.T) {
	_, err := ParseStrict("j.yaml", []byte(`metadata: {name: j}
workflow:
  - step: x
    tool: {kind: shell, command: "echo '{\"rows\": 3}'"}
    next:
      - when: "steps.x.result.rows > 0"
        then: [y]
  - step: y
    tool: {kind: http, url: "http://127.0.0.1:1/"}
  - step: z
    depends_on: [y]
    tool: {kind: noop, result: "{{ steps.y.result.items }}"}
`), "")
	require.EqualError(t, err, `j.yaml:6: step "x": when: "steps.x.result.rows > 0": unknown field rows (1:16): a shell step's result is {exit_code, json, stderr, stdout}; write steps.x.result.json.rows for a field of the JSON it gave
j.yaml:12: step "z": tool: "steps.y.result.items": unknown field items (1:16): an http step's result is {body, headers, json, status_code}; write steps.y.result.json.items for a field of the JSON it gave`)
}

// An http step's retry_when that orders status_code without a test for
// nil means what it says (an ordering with null is false): it is
// accepted, with a warning that a request with no answer is not retried.
func TestUnguardedStatusCodeIsAWarning(t *testing.T) {
	for _, tc := range []struct{ retry, want string }{
		{`retry_when: "status_code >= 500 and status_code < 600"`, `h.yaml:5: step "fetch": warning: retry.retry_when: "status_code >= 500 and status_code < 600": status_code is null when the request got no answer (connection refused, a timeout), so such an attempt is not retried; write "status_code == nil or status_code >= 500 and status_code < 600" to include it`},
		{`stop_when: "status_code == 404"`, ``},
		{`stop_when: "status_code < 500"`, `h.yaml:5: step "fetch": warning: retry.stop_when: "status_code < 500": status_code is null when the request got no answer (connection refused, a timeout), so such an attempt is not stopped; write "status_code == nil or status_code < 500" to include it`},
		{`retry_when: "status_code == nil or status_code >= 500"`, ``},
	} {
		pb, err := ParseStrict("h.yaml", []byte(`metadata: {name: h}
workflow:
  - step: fetch
    tool: {kind: http, url: "http://127.0.0.1:1/"}
    retry: {max_attempts: 3, `+tc.retry+`}
`), "")
		require.NoError(t, err, tc.retry)
		if tc.want == "" {
			require.Empty(t, pb.Warnings, tc.retry)
		} else {
			require.Equal(t, []string{tc.want}, pb.Warnings, tc.retry)
		}
	}
}

// One problem, one line: a wait's duration of .nan is told by the field,
// not again as a number JSON cannot carry; aliases that expand past the
// bound are told once, not again by YAML's decoder where they are used.
func TestOneProblemOneLine(t *testing.T) {
	_, err := ParseStrict("n.yaml", []byte(`metadata: {name: n}
workflow:
  - step: w
    tool: {kind: wait, duration: .nan}
`), "")
	require.EqualError(t, err, `n.yaml:4: step "w": tool duration: bad duration NaN (write e.g. 30s, 10m, 1h30m)`)

	var b strings.Builder
	b.WriteString("metadata: {name: b}\nx-a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for c := 'b'; c <= 'i'; c++ {
		fmt.Fprintf(&b, "x-%c: &%c [%s]\n", c, c, strings.TrimSuffix(strings.Repeat("*"+string(c-1)+", ", 9), ", "))
	}
	b.WriteString("workflow:\n  - step: w\n    tool: {kind: noop, result: *i}\n")
	_, err = ParseStrict("b.yaml", []byte(b.String()), "")
	require.EqualError(t, err, `b.yaml:6: the file's aliases expand to more than 50000 values: use fewer aliases of aliases`)
}

// trigger.* reads what started the run: refused at submission in a
// playbook that declares no triggers, typed in one that does.
func TestTriggerIsReadOnlyWithTriggers(t *testing.T) {
	step := "workflow:\n  - step: a\n    tool: {kind: noop, result: \"{{ trigger.%s }}\"}\n"
	_, err := ParseStrict("x.yaml", []byte("metadata: {name: x}\n"+fmt.Sprintf(step, "run_id")), "")
	require.EqualError(t, err, `x.yaml:4: step "a": tool: "trigger.run_id": unknown name trigger (1:1): trigger is what started the run, read by a playbook with triggers: (a run started by hand or a schedule has nothing to read there)`)
	with := "metadata: {name: x}\ntriggers: [{after: {playbook: up}}]\n"
	_, err = ParseStrict("x.yaml", []byte(with+fmt.Sprintf(step, "run_id")), "")
	require.NoError(t, err)
	_, err = ParseStrict("x.yaml", []byte(with+fmt.Sprintf(step, "run")), "")
	require.EqualError(t, err, `x.yaml:5: step "a": tool: "trigger.run": unknown field run (1:9)`)
}

// A step whose `next` is misspelt has lost its arc: the step after it,
// reading it, is not told that it is not upstream (the one mistake is told
// once, as docs/GETTING_STARTED.md shows).
func TestAMisspeltNextIsToldOnce(t *testing.T) {
	_, err := ParseStrict("n.yaml", []byte(`metadata: {name: n}
workflow:
  - step: greet
    tool: {kind: noop, result: hi}
    nxt: shout
  - step: shout
    tool: {kind: noop, result: "{{ upper(steps.greet.result) }}"}
`), "")
	require.EqualError(t, err, `n.yaml:5: step "greet": unknown key "nxt" in a step (known: allow_failure, always, depends_on, desc, failure_handler, heartbeat_timeout, inputs, local, loop, lost_attempts, next, on_cancel, on_failure, on_lost, outputs, queue, reads, retries, retry, retry_delay, step, success_when, timeout, tool)`)
}
