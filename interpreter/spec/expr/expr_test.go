package expr

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// twentyKeys is a map whose Go iteration order changes from one range to
// the next.
func twentyKeys() (map[string]any, []any) {
	m := map[string]any{}
	var sorted []any
	for i := 1; i <= 20; i++ {
		k := fmt.Sprintf("k%02d", i)
		m[k] = i
		sorted = append(sorted, k)
	}
	return m, sorted
}

func TestMapBuiltinsAreSortedByKey(t *testing.T) {
	m, sorted := twentyKeys()
	env := map[string]any{"workload": map[string]any{"m": m}, "steps": map[string]any{}, "execution_id": "e", "playbook": map[string]any{}}
	keys, err := CompileExpr("keys(workload.m)", ScopeStep, false)
	require.NoError(t, err)
	values, err := CompileExpr("values(workload.m)", ScopeStep, false)
	require.NoError(t, err)
	pairs, err := CompileExpr("toPairs(workload.m)[0][0] + '=' + string(toPairs(workload.m)[19][1])", ScopeStep, false)
	require.NoError(t, err)
	for range 20 {
		got, err := keys.Eval(env)
		require.NoError(t, err)
		require.Equal(t, sorted, got)
		got, err = values.Eval(env)
		require.NoError(t, err)
		require.Equal(t, 1, got.([]any)[0])
		require.Equal(t, 20, got.([]any)[19])
		got, err = pairs.Eval(env)
		require.NoError(t, err)
		require.Equal(t, "k01=20", got)
	}
	_, err = keys.Eval(map[string]any{"workload": map[string]any{"m": 3}, "steps": map[string]any{}, "execution_id": "e", "playbook": map[string]any{}})
	require.ErrorContains(t, err, "keys takes a map, not int")
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
		tpl, err := CompileTemplate(tc.src, ScopeStep)
		require.NoError(t, err, tc.src)
		got, err := tpl.Render(env)
		require.NoError(t, err, tc.src)
		require.Equal(t, tc.want, got, tc.src)
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int]string{900: "900 B", 1 << 10: "1 KiB", 1536: "1.5 KiB", 3 << 19: "1.5 MiB", 2<<20 + 1: "2 MiB", 1<<20 + 1<<19 + 1<<17: "1.6 MiB"} {
		require.Equal(t, want, FormatBytes(n), n)
	}
}

// A stub that came back through JSON (a sub-playbook's aggregate) is still
// recognised, and an ordinary map with the same keys is not a stub.
func TestTruncatedSize(t *testing.T) {
	n, ok := TruncatedSize(map[string]any{"truncated": true, "bytes": 2048.0, "budget": 1024.0, "full_in": "x"})
	require.True(t, ok)
	require.Equal(t, 2048, n)
	_, ok = TruncatedSize(map[string]any{"truncated": true, "bytes": 2048.0, "rows": 3})
	require.False(t, ok)
	_, ok = TruncatedSize(map[string]any{"truncated": "yes", "bytes": 1, "budget": 1, "full_in": "x"})
	require.False(t, ok)
}

// A template whose {{ is not closed says where it opens.
func TestAnUnclosedTemplateSaysWhere(t *testing.T) {
	_, err := CompileTemplate("{{ workload.base }/json", ScopeStep)
	require.EqualError(t, err, `template "{{ workload.base }/json": the {{ at "{{ workload.base }/json" is not closed by }}`)
	_, err = CompileTemplate("a {{ workload.x }} then {{ workload.some_long_key.more", ScopeStep)
	require.EqualError(t, err, `template "a {{ workload.x }} then {{ workload.some_long_key.more": the {{ at "{{ workload.some_long_ke..." is not closed by }}`)
}
