package submit

import (
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
`, `x.yaml:4: triggers: after.playbook "x" is this playbook: each run would start the next as it ends, without end (a run every minute is a schedule: schedule: {every: 1m})`},
		{"trigger read without triggers", `metadata: {name: x}
workflow:
  - step: a
    tool: {kind: noop, result: "{{ trigger.kind }}"}
`, `x.yaml:4: step "a": tool: "trigger.kind": unknown name trigger (1:1): trigger is what started the run, read by a playbook with triggers: (a run started by hand or a schedule has nothing to read there)`},
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
