package spec

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestConcurrencyErrors(t *testing.T) {
	cases := []struct{ name, concurrency, want string }{
		{"reads a step", `{key: "{{ steps.a.result }}", limit: 1}`,
			`flows/x.yaml:3: concurrency.key "steps.a.result" may read only the workload: it is rendered before any step runs, once for the whole run`},
		{"reads the run's time", `{key: "{{ run.logical_time }}", limit: 1}`,
			`flows/x.yaml:3: concurrency.key "run.logical_time" may read only the workload: it is rendered before any step runs, once for the whole run`},
		{"reads an undeclared workload key", `{key: "{{ workload.servise }}", limit: 1}`,
			`flows/x.yaml:3: concurrency.key reads workload.servise, which the workload does not declare`},
		{"no limit", `{key: a}`, `flows/x.yaml:3: concurrency.limit is required: how many runs with the same key run at once`},
		{"limit 0", `{key: a, limit: 0}`, `flows/x.yaml:3: concurrency.limit must be at least 1, not 0`},
		{"unknown on_limit", `{limit: 1, on_limit: cancel}`, `flows/x.yaml:3: concurrency.on_limit must be queue, fail or cancel_running, not "cancel"`},
		{"unknown key", `{limit: 1, group: a}`, `flows/x.yaml:3: unknown key "group" in concurrency (known: key, limit, on_limit)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("flows/x.yaml", []byte("metadata: {name: x}\nworkload: {service: web}\nconcurrency: "+c.concurrency+"\nworkflow:\n  - step: a\n"))
			require.Error(t, err)
			require.Equal(t, c.want, err.Error())
		})
	}
}

func TestConcurrencyKeyRendersFromTheWorkload(t *testing.T) {
	pb, err := Parse("x.yaml", []byte("metadata: {name: x}\nworkload: {service: web}\nconcurrency: {key: \"deploy-{{ workload.service }}\", limit: 2}\nworkflow:\n  - step: a\n"))
	require.NoError(t, err)
	require.Equal(t, 2, pb.Concurrency.Limit)
	require.Equal(t, OnLimitQueue, pb.Concurrency.OnLimit)
	key, err := pb.Concurrency.RenderKey(map[string]any{"workload": map[string]any{"service": "api"}})
	require.NoError(t, err)
	require.Equal(t, "deploy-api", key)

	pb, err = Parse("x.yaml", []byte("metadata: {name: x}\nconcurrency: {limit: 1, on_limit: fail}\nworkflow:\n  - step: a\n"))
	require.NoError(t, err)
	key, err = pb.Concurrency.RenderKey(nil)
	require.NoError(t, err)
	require.Equal(t, "", key, "no key: every run of the playbook shares one")
	require.Equal(t, OnLimitFail, pb.Concurrency.OnLimit)
}
