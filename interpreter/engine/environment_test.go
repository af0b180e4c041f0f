package engine

import (
	"testing"
	"time"

	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"

	"github.com/stretchr/testify/require"
)

func TestWorkloadOverridesDefaults(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte("metadata: {name: t}\nworkload: {a: 1, b: 2}\nworkflow:\n  - {step: s, tool: {kind: noop, result: '{{ workload.a + workload.b }}'}}\n"))
	require.NoError(t, err)
	run := NewRun(pb, map[string]any{"b": 40}, "t-1", time.Now)
	toolSpec, err := run.RenderTool(run.Ready()[0])
	require.NoError(t, err)
	require.Equal(t, 41, toolSpec["result"])
}

func TestTemplates(t *testing.T) {
	env := map[string]any{"workload": map[string]any{"n": 3.0, "name": "x", "list": []any{1, 2}}, "steps": map[string]any{}, "execution_id": "e-1", "playbook": map[string]any{}}
	cases := []struct {
		src  string
		want any
	}{
		{"{{ workload.n }}", 3.0},
		{"  {{ workload.list }} ", []any{1, 2}},
		{"n={{ workload.n }}", "n=3"},
		{"{{ workload.name }}-{{ execution_id }}", "x-e-1"},
		{"list: {{ workload.list }}", "list: [1,2]"},
		{"{{ workload.missing }}!", "!"},
	}
	for _, tc := range cases {
		tpl, err := expr.CompileTemplate(tc.src, expr.ScopeStep)
		require.NoError(t, err, tc.src)
		got, err := tpl.Render(env)
		require.NoError(t, err, tc.src)
		require.Equal(t, tc.want, got, tc.src)
	}
}
