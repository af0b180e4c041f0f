package expr

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// An ordering with null is false in the null-safe program, and an error,
// as always, in the program as written; everything else evaluates alike.
func TestOrderingsWithNullAreFalse(t *testing.T) {
	env := map[string]any{"status_code": nil, "attempt": 2, "result": map[string]any{"count": nil, "rows": 7}, "error": nil, "exit_code": nil, "success": false}
	for _, c := range []struct {
		src    string
		want   bool
		strict string // the error as written; "" when none
	}{
		{"status_code >= 500", false, "invalid operation: <nil> >= int"},
		{"500 <= status_code", false, "invalid operation: int <= <nil>"},
		{"status_code == nil or status_code >= 500", true, ""},
		{"status_code != nil and status_code >= 500", false, ""},
		{"result.count > 3 or attempt < 3", true, "invalid operation: <nil> > int"},
		{"result.rows > 3", true, ""},
		{"!(status_code < 400)", true, "invalid operation: <nil> < int"},
		{"attempt >= 2.5", false, ""},
	} {
		e, err := CompileExpr(c.src, ScopeRetry, true)
		require.NoError(t, err, c.src)
		got, err := e.EvalBoolNullSafe(env)
		require.NoError(t, err, c.src)
		require.Equal(t, c.want, got, c.src)
		_, strict := e.EvalBool(env)
		if c.strict == "" {
			require.NoError(t, strict, c.src)
			continue
		}
		require.ErrorContains(t, strict, c.strict, c.src)
		require.True(t, IsNullComparison(strict), c.src)
	}
	// Values that cannot be ordered stay an error.
	e, err := CompileExpr(`result.rows < "x"`, ScopeRetry, true)
	require.NoError(t, err)
	_, err = e.EvalBoolNullSafe(env)
	require.Error(t, err)
	require.False(t, IsNullComparison(err))
}

// A field or an index of null is null under NullMembers, and an error, as
// always, in the program as written; the two rules apply apart.
func TestMembersOfNullAreNull(t *testing.T) {
	env := map[string]any{"steps": map[string]any{
		"probe": map[string]any{"status": "completed", "error": nil, "result": map[string]any{"count": nil, "items": []any{1}}},
	}}
	for _, c := range []struct {
		src  string
		need Safety
		want bool
	}{
		{"steps.probe.error.type == 'disk_low'", NullMembers, false},
		{"steps.probe.error.type != 'disk_low'", NullMembers, true},
		{"steps.probe.error['type'] == nil", NullMembers, true},
		{"steps.probe.error?.type == nil", 0, true},
		{"steps.probe.result.count.n == nil", NullMembers, true},
		{"steps.probe.result.items[0] == 1", 0, true},
		{"steps.probe.error.code > 3", NullMembers | NullOrderings, false},
	} {
		e, err := CompileExpr(c.src, ScopeEnd, true)
		require.NoError(t, err, c.src)
		got, err := e.EvalBoolWith(env, c.need)
		require.NoError(t, err, c.src)
		require.Equal(t, c.want, got, c.src)
		if c.need == 0 {
			continue
		}
		_, strict := e.EvalBool(env)
		require.Equal(t, c.need&NullMembers, Needs(strict), "%s: %v", c.src, strict)
		_, partly := e.EvalBoolWith(env, c.need&^NullMembers)
		require.Error(t, partly, c.src)
	}
}
