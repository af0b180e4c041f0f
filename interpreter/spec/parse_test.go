package spec

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"unknown next target", `
metadata: {name: x}
workflow:
  - step: extract
    next: lod
  - step: load
`, `flows/x.yaml:5: step "extract": next names unknown step "lod" (did you mean "load"?)`},
		{"unknown depends_on target", `
metadata: {name: x}
workflow:
  - step: a
  - step: b
    depends_on: [a, zzz]
`, `flows/x.yaml:6: step "b": depends_on names unknown step "zzz"`},
		{"unknown step key", `
metadata: {name: x}
workflow:
  - step: a
    nxt: b
`, `flows/x.yaml:5: step "a": unknown key "nxt" in a step (known: allow_failure, always, depends_on, desc, failure_handler, heartbeat_timeout, inputs, local, loop, lost_attempts, next, on_cancel, on_failure, on_lost, outputs, queue, reads, retries, retry, retry_delay, step, success_when, timeout, tool)`},
		{"unknown top-level key", `
metadata: {name: x}
worklfow: []
`, `flows/x.yaml:3: unknown key "worklfow" in the playbook (known: apiVersion, concurrency, failure_handlers, failure_mode, kind, local, lost_attempts, metadata, notify, on_timeout, pending_timeout, queue, schedule, timeout, triggers, use_pending_failed, workflow, workload)`},
		{"duplicate step", `
metadata: {name: x}
workflow:
  - step: a
  - step: a
`, `flows/x.yaml:5: step "a": step name used twice (first at line 4)`},
		{"cycle", `
metadata: {name: x}
workflow:
  - step: a
    next: b
  - step: b
    next: c
  - step: c
    next: a
`, `flows/x.yaml:4: step "a": the graph has a cycle: a -> b -> c -> a (iterate with loop, poll with retry_when)`},
		{"cycle through depends_on", `
metadata: {name: x}
workflow:
  - step: a
    depends_on: [b]
  - step: b
    depends_on: [a]
`, `flows/x.yaml:4: step "a": the graph has a cycle: a -> b -> a (iterate with loop, poll with retry_when)`},
		{"bad expression", `
metadata: {name: x}
workflow:
  - step: a
    next:
      - when: "steps.a.result >"
        then: [b]
  - step: b
`, `flows/x.yaml:6: step "a": when: "steps.a.result >": unexpected token EOF (1:16)`},
		{"unknown name in expression", `
metadata: {name: x}
workflow:
  - step: a
    next:
      - when: "workloda.x > 1"
        then: [b]
  - step: b
`, `flows/x.yaml:6: step "a": when: "workloda.x > 1": unknown name workloda (1:1)`},
		{"expression reads unknown step", `
metadata: {name: x}
workflow:
  - step: a
    next:
      - when: "steps.extrat.status == 'completed'"
        then: [b]
  - step: b
`, `flows/x.yaml:6: step "a": expression "steps.extrat.status == 'completed'" reads steps.extrat, but there is no step "extrat"`},
		{"bad template", `
metadata: {name: x}
workflow:
  - step: a
    tool: {kind: noop, result: "{{ 1 + }}"}
`, `flows/x.yaml:5: step "a": tool: "1 +": unexpected token EOF (1:3)`},
		{"now is disabled", `
metadata: {name: x}
workflow:
  - step: a
    tool: {kind: noop, result: "{{ now() }}"}
`, `flows/x.yaml:5: step "a": tool: "now()": unknown name now (1:1): an expression does not read the clock (a replay would read another time); run.logical_time is the time the run stands for`},
		{"bad duration", `
metadata: {name: x}
workflow:
  - step: a
    timeout: 10 minutes
    tool: {kind: noop}
`, `flows/x.yaml:5: step "a": timeout: bad duration "10 minutes" (write e.g. 30s, 10m, 1h30m)`},
		{"unknown tool kind", `
metadata: {name: x}
workflow:
  - step: a
    tool: {kind: bash, command: ls}
`, `flows/x.yaml:5: step "a": unknown tool kind "bash" (one of: approval, fail, http, noop, playbook, python, shell, wait, wait_event)`},
		{"wait_event without an event", `
metadata: {name: x}
workflow:
  - step: a
    tool: {kind: wait_event, timeout: 1m}
`, `flows/x.yaml:5: step "a": wait_event tool needs an event: the name of the event it waits for`},
		{"wait_event with a templated event", `
metadata: {name: x}
workflow:
  - step: a
    tool: {kind: wait_event, event: "{{ workload.x }}"}
`, `flows/x.yaml:5: step "a": wait_event tool: event "{{ workload.x }}" must match [a-z0-9][a-z0-9_-]* (no template: a sender names it)`},
		{"wait_event on_timeout without timeout", `
metadata: {name: x}
workflow:
  - step: a
    tool: {kind: wait_event, event: go, on_timeout: complete}
`, `flows/x.yaml:5: step "a": wait_event tool: on_timeout needs a timeout in the tool (tool: {kind: wait_event, timeout: 1h, on_timeout: ...}): how long the step waits`},
		{"wait_event with a step timeout", `
metadata: {name: x}
workflow:
  - step: a
    timeout: 1m
    tool: {kind: wait_event, event: go}
`, `flows/x.yaml:5: step "a": timeout bounds an activity's attempt, and a wait_event runs none: write its timeout in its tool (tool: {kind: wait_event, event: NAME, timeout: 2h, on_timeout: fail})`},
		{"unknown tool field", `
metadata: {name: x}
workflow:
  - step: a
    tool: {kind: shell, comand: ls}
`, `flows/x.yaml:5: step "a": unknown key "comand" in shell tool (known: command, env, kind, workdir)`},
		{"template in shell text", `
metadata: {name: x}
workflow:
  - step: a
    tool: {kind: shell, command: "rm -rf {{ workload.dir }}"}
`, `flows/x.yaml:5: step "a": shell tool: command holds a template; pass the value through env (env: {X: "{{ ... }}"}) and use "$X" in the command`},
		{"template in python source", `
metadata: {name: x}
workflow:
  - step: a
    tool: {kind: python, code: "def main(): return {{ workload.n }}"}
`, `flows/x.yaml:5: step "a": python tool: code holds a template; pass the value through args (args: {x: "{{ ... }}"}) and read it in main`},
		{"shell without command", `
metadata: {name: x}
workflow:
  - step: a
    tool: {kind: shell}
`, `flows/x.yaml:5: step "a": shell tool needs a command`},
		{"loop without a tool", `
metadata: {name: x}
workflow:
  - step: a
    loop: {in: "[1,2]", iterator: i}
`, `flows/x.yaml:4: step "a": loop needs a tool to run for each element`},
		{"loop iterator unknown in a template", `
metadata: {name: x}
workflow:
  - step: a
    loop: {in: "[1,2]", iterator: i}
    tool: {kind: noop, result: "{{ item }}"}
`, `flows/x.yaml:6: step "a": tool: "item": unknown name item (1:1)`},
		{"loop iterator shadowing a name", `
metadata: {name: x}
workflow:
  - step: a
    loop: {in: "[1,2]", iterator: workload}
    tool: {kind: noop}
`, `flows/x.yaml:5: step "a": loop.iterator "workload" must be a new name (letters, digits, _)`},
		{"templated sub-playbook path", `
metadata: {name: x}
workflow:
  - step: a
    tool: {kind: playbook, path: "{{ workload.file }}"}
`, `flows/x.yaml:5: step "a": playbook tool: path must be a plain file name: sub-playbooks are frozen into the run when it is submitted`},
		{"unknown failure handler", `
metadata: {name: x}
failure_handlers:
  - name: flaky_io
    rules: [{match_all_exit_codes: true}]
workflow:
  - step: a
    tool: {kind: shell, command: "true"}
    failure_handler: flaky
`, `flows/x.yaml:9: step "a": failure_handler names unknown handler "flaky" (known: flaky_io)`},
		{"failure handler on http", `
metadata: {name: x}
failure_handlers:
  - name: h
    rules: [{exit_codes: [1]}]
workflow:
  - step: a
    tool: {kind: http, url: "http://127.0.0.1:1"}
    failure_handler: h
`, `flows/x.yaml:9: step "a": failure_handler needs a shell or python tool: exit-code rules match a process's exit code`},
		{"rule without codes", `
metadata: {name: x}
failure_handlers:
  - name: h
    rules: [{max_retries: 2}]
workflow: []
`, `flows/x.yaml:5: an exit-code rule needs either exit_codes or match_all_exit_codes: true`},
		{"webhook not a URL", `
metadata: {name: x}
notify: {on_failure: {webhook: "127.0.0.1:9000"}}
workflow: []
`, `flows/x.yaml:3: notify.on_failure.webhook must be an http:// or https:// URL, not "127.0.0.1:9000"`},
		{"bad failure mode", `
metadata: {name: x}
failure_mode: abort
workflow: []
`, `flows/x.yaml:3: failure_mode must be continue, stop or cancel, not "abort"`},
		{"missing name", `
workflow: []
`, `flows/x.yaml:2: metadata.name is required`},
		{"bad name", `
metadata: {name: Nightly ETL}
workflow: []
`, `flows/x.yaml:2: metadata.name "Nightly ETL" must match [a-z0-9][a-z0-9_-]*`},
		{"success_when off end", `
metadata: {name: x}
workflow:
  - step: a
    success_when: "true"
`, `flows/x.yaml:5: step "a": success_when belongs on the end step only`},
		{"end with next", `
metadata: {name: x}
workflow:
  - step: a
  - step: end
    next: a
`, `flows/x.yaml:5: step "end": end is the terminal step: it has no next`},
		{"retry and retries", `
metadata: {name: x}
workflow:
  - step: a
    tool: {kind: noop}
    retry: 3
    retries: 2
`, `flows/x.yaml:6: step "a": give either retry or retries/retry_delay, not both`},
		{"else not last", `
metadata: {name: x}
workflow:
  - step: a
    next:
      - else: [b]
      - when: "true"
        then: [b]
  - step: b
`, `flows/x.yaml:6: step "a": next: else must be the last item`},
		{"on_timeout without timeout", `
metadata: {name: x}
on_timeout: fail
workflow:
  - step: a
`, `flows/x.yaml:3: on_timeout applies to the run's timeout, and the playbook sets none`},
		{"on_timeout unknown", `
metadata: {name: x}
timeout: 1m
on_timeout: skip
workflow:
  - step: a
`, `flows/x.yaml:4: on_timeout must be cancel or fail, not "skip"`},
		{"bad run timeout", `
metadata: {name: x}
timeout: soon
workflow:
  - step: a
`, `flows/x.yaml:3: timeout: bad duration "soon" (write e.g. 30s, 10m, 1h30m)`},
		{"zero run timeout", `
metadata: {name: x}
timeout: 0s
workflow:
  - step: a
`, `flows/x.yaml:3: timeout must be more than 0 (leave it out for a run without a deadline)`},
		{"always with on_failure", `
metadata: {name: x}
workflow:
  - step: a
    always: true
    on_failure: run
`, `flows/x.yaml:5: step "a": give either always or on_failure/on_cancel, not both (always: true is on_failure: run and on_cancel: run)`},
		{"always with on_cancel", `
metadata: {name: x}
workflow:
  - step: a
    on_cancel: run
    always: false
`, `flows/x.yaml:6: step "a": give either always or on_failure/on_cancel, not both (always: true is on_failure: run and on_cancel: run)`},
		{"on_cancel not run", `
metadata: {name: x}
workflow:
  - step: a
    on_cancel: skip
`, `flows/x.yaml:5: step "a": on_cancel must be run (leave it out for a step a cancel skips), not "skip"`},
		{"always not a boolean", `
metadata: {name: x}
workflow:
  - step: a
    always: 3
`, `flows/x.yaml:5: step "a": always must be true or false, not 3`},
		{"on_cancel on end", `
metadata: {name: x}
workflow:
  - step: a
  - step: end
    on_cancel: run
`, `flows/x.yaml:6: step "end": end always runs: on_cancel does not apply to it`},
		{"yaml syntax", "metadata: {name: x\nworkflow: []\n", `flows/x.yaml:1: did not find expected ',' or '}': a {...} or [...] is not closed, or a value in it holds a comma or a colon and must be quoted`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("flows/x.yaml", []byte(tc.src))
			require.Error(t, err)
			require.Equal(t, tc.want, err.Error())
			require.NotContains(t, err.Error(), "\n", "errors are one line")
		})
	}
}

func TestStepDefinitionsIgnoreLayoutOrderAndDesc(t *testing.T) {
	a := StepDefinitions([]byte(`metadata: {name: t}
x-env: &env {D: /tmp}
failure_handlers: [{name: h, rules: [{exit_codes: [3], max_retries: 1}]}]
workflow:
  - {step: a, desc: first, tool: {kind: shell, command: "echo a", env: *env}, failure_handler: h}
`))
	b := StepDefinitions([]byte(`metadata: {name: t}
failure_handlers:
  - name: other
    rules: [{max_retries: 1, exit_codes: [3]}]
workflow:
  - step: a
    failure_handler: other
    tool:
      env: {D: /tmp}
      command: echo a
      kind: shell
`))
	require.Equal(t, a, b)
	require.Equal(t, `{"failure_handler":{"rules":[{"exit_codes":[3],"max_retries":1}]},"step":"a","tool":{"command":"echo a","env":{"D":"/tmp"},"kind":"shell"}}`, a["a"])
}
