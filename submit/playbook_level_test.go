package submit

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// What a playbook sets for all its runs is checked as its steps are: a
// concurrency key's types (it is rendered before any step runs, and would
// fail the run as refused by its limit), and an after trigger on the
// playbook itself (each run would start the next, without end).
func TestPlaybookLevelSettingsAreChecked(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"a concurrency key of the wrong type", `metadata: {name: x}
workload: {service: web}
concurrency:
  limit: 1
  key: "{{ workload.service + 1 }}"
workflow:
  - step: a
`, `x.yaml:5: concurrency.key: "workload.service + 1": invalid operation: + (mismatched types string and int) (1:18)`},
		{"a trigger after itself", `metadata: {name: x}
triggers:
  - after: {playbook: other}
  - after: {playbook: x, status: [failed]}
workflow:
  - step: a
`, `x.yaml:4: triggers: after.playbook "x" is this playbook: each run that ends failed would start the next, with nothing to bound them (a step's retry: retries it; schedule: runs it every so often)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseStrict("x.yaml", []byte(c.src), "")
			require.EqualError(t, err, c.want)
		})
	}
	_, err := ParseStrict("x.yaml", []byte(`metadata: {name: x}
workload: {service: web, shard: 3}
concurrency: {limit: 1, key: "{{ workload.service }}-{{ workload.shard + 1 }}"}
triggers: [{after: {playbook: y}}]
workflow:
  - step: a
`), "")
	require.NoError(t, err)
}

// One pass tells every problem of the playbook's own keys: a bad
// concurrency or trigger entry does not hide on_timeout without a
// timeout, a bad first trigger does not hide the second's problem, nor a
// wrong status the same entry's bad playbook name.
func TestPlaybookLevelProblemsAreToldTogether(t *testing.T) {
	_, err := ParseStrict("x.yaml", []byte(`metadata: {name: x}
on_timeout: fail
concurrency: {limit: 0}
triggers:
  - after: {playbook: Nightly_Extract, status: [done]}
  - webhook: {name: Bad Name, secret: {secret: s}}
workflow:
  - step: a
`), "")
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	for _, want := range []string{
		`x.yaml:2: on_timeout applies to the run's timeout, and the playbook sets none`,
		`x.yaml:3: concurrency.limit must be at least 1, not 0`,
		`x.yaml:5: after.status "done" is not how a run ends`,
		`x.yaml:5: triggers: after.playbook "Nightly_Extract" must be a playbook's metadata.name`,
		`x.yaml:6: triggers: webhook.name "Bad Name" must match [a-z0-9][a-z0-9_-]*`,
	} {
		require.True(t, slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, want) }), "%q among:\n%s", want, err)
	}
}

// groupBy and fromPairs give a mapping whose keys may be any value: no
// step's input or result can hold it (the step failed at run time with
// "json: unsupported type"), so a template giving one whole is refused;
// one entry of it, or its pairs, is fine.
func TestAMappingWithKeysOfAnyTypeIsRefused(t *testing.T) {
	_, err := ParseStrict("x.yaml", []byte(`metadata: {name: x}
workload: {files: [a.csv, b.txt]}
workflow:
  - step: a
    tool: {kind: noop, result: "{{ groupBy(workload.files, split(#, '.')[1]) }}"}
  - step: b
    tool: {kind: shell, command: echo, env: {G: "n={{ fromPairs([['a', 1]]) }}"}}
  - step: ok
    tool: {kind: noop, result: "{{ groupBy(workload.files, split(#, '.')[1])['csv'] }} {{ toPairs(fromPairs([['a', 1]])) }}"}
`), "")
	require.EqualError(t, err, `x.yaml:5: step "a": tool: "groupBy(workload.files, split(#, '.')[1])": gives a mapping whose keys may be any value, which no step's input or result can hold: read one entry (groupBy(...)['csv']), or turn it into a list (toPairs(...))`+"\n"+
		`x.yaml:7: step "b": tool: "fromPairs([['a', 1]])": gives a mapping whose keys may be any value, which no step's input or result can hold: read one entry (groupBy(...)['csv']), or turn it into a list (toPairs(...))`)
}

// date, duration and timezone called with text written in the
// expression fail the same way in every run: refused at validation.
func TestTimeCallsOfConstantsAreChecked(t *testing.T) {
	_, err := ParseStrict("x.yaml", []byte(`metadata: {name: x}
workflow:
  - step: a
    tool: {kind: noop, result: "{{ date('2026-13-45').Year() }}"}
  - step: b
    tool: {kind: noop, result: "{{ duration('5 minutes') }}"}
  - step: ok
    tool: {kind: noop, result: "{{ date('2026-01-02').Year() }} {{ duration('5m').Minutes() }} {{ date('2026-01-02 10:00', '2006-01-02 15:04', 'Europe/Paris') }} {{ timezone('Asia/Tokyo') }}"}
`), "")
	require.EqualError(t, err, `x.yaml:4: step "a": tool: "date('2026-13-45').Year()": fails in every run: invalid date 2026-13-45`+"\n"+
		`x.yaml:6: step "b": tool: "duration('5 minutes')": fails in every run: time: unknown unit " minutes" in duration "5 minutes"`)
}
