package contract

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A loop driver's input carries the spans of the reused elements and the
// size of their results, never the results; the run fills them into the
// list the driver returns, and leaves a stub alone.
func TestReusedResultsTravelOnce(t *testing.T) {
	r := &ElementReuse{Total: 4, Spans: [][2]int{{0, 2}, {3, 4}}, Results: map[int]any{0: "a", 1: 7.0, 3: map[string]any{"k": "v"}}, Earlier: "run x"}
	c := r.Carried()
	require.Nil(t, c.Results)
	require.True(t, c.Kept)
	require.Equal(t, r.Spans, c.Spans)
	require.Equal(t, len(`"a"`)+1+len(`7`)+1+len(`{"k":"v"}`)+1, c.ResultBytes)

	for _, tc := range []struct {
		name string
		in   any
		want any
	}{
		{"the driver's list", []any{nil, nil, "new", nil}, []any{"a", 7.0, "new", map[string]any{"k": "v"}}},
		{"a stub", map[string]any{"truncated": true}, map[string]any{"truncated": true}},
		{"a list of another length", []any{nil}, []any{nil}},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, r.FillIn(tc.in)) })
	}
	var none *ElementReuse
	require.Equal(t, []any{nil}, none.FillIn([]any{nil}))
}
