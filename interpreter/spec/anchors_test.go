package spec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// An alias stands for its anchor's value wherever a key expects one; a
// merge key extends a mapping, its own keys winning, and of several merged
// mappings the first; x- keys are ignored.
func TestAnchorsAliasesAndMergeKeys(t *testing.T) {
	pb, err := Parse("a.yaml", []byte(`metadata: {name: a}
x-retry: &retry {max_attempts: 4, initial_delay: 1s}
x-more: &more {max_attempts: 9, max_delay: 1m}
workflow:
  - step: a
    x-note: ignored
    retry: *retry
    tool: {kind: noop}
  - step: b
    retry:
      <<: [*retry, *more]
      initial_delay: 2s
    tool: {kind: noop}
`))
	require.NoError(t, err)
	a, b := pb.Step("a").RetryBlock(), pb.Step("b").RetryBlock()
	require.Equal(t, 4, a.MaxAttempts)
	require.Equal(t, "1s", a.InitialDelay.String())
	require.Equal(t, 4, b.MaxAttempts, "the first merged mapping wins")
	require.Equal(t, "2s", b.InitialDelay.String(), "the mapping's own key wins")
	require.Equal(t, "1m0s", b.MaxDelay.String(), "a key only the second merged mapping has")
}

// A value's merges and aliases mean for the workload what YAML's own
// decoder makes of them: the runs of files that had them before (in free
// values, where they always worked) see the same workload.
func TestExpandedValuesDecodeAsBefore(t *testing.T) {
	src := `
base: &base {host: a, port: 1, tags: [x]}
other: &other {port: 2, user: u}
db:
  <<: [*base, *other]
  host: b
copy: *base
list: [*base, {<<: *other}]
`
	var before any
	require.NoError(t, yaml.Unmarshal([]byte(src), &before))
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(src), &doc))
	require.NoError(t, (&decoder{file: "w.yaml"}).expandAliases(&doc))
	var after any
	require.NoError(t, doc.Decode(&after))
	require.Equal(t, before, after)
}

// A problem inside an aliased value is reported at the alias, where the
// value is used; a merge key's value must be mappings.
func TestAliasErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"unknown key in an aliased retry", `metadata: {name: a}
x-retry: &retry {max_attempts: 3, bogus: 1}
workflow:
  - step: a
    tool: {kind: noop}
    retry: *retry
`, `a.yaml:6: step "a": unknown key "bogus" in retry (known: backoff_multiplier, initial_delay, jitter, max_attempts, max_delay, max_duration, retry_when, stop_when)`},
		{"merge of a scalar", `metadata: {name: a}
workflow:
  - step: a
    tool:
      <<: 5
      kind: noop
`, `a.yaml:5: << (a merge key) takes a mapping, an alias of one, or a list of them`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("a.yaml", []byte(tc.src))
			require.EqualError(t, err, tc.want)
		})
	}
}

// Aliases of aliases cannot expand without bound (the "billion laughs").
func TestAliasExpansionIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("metadata: {name: a}\nx-0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "x-%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	b.WriteString("workflow:\n  - step: a\n    tool: {kind: noop}\n")
	src := []byte(b.String())
	pb, err := Parse("a.yaml", src)
	require.NoError(t, err, "the workflow's re-parse accepts it, as it did before (only free values hold the aliases)")
	require.ErrorContains(t, pb.CheckSubmit(), "the file's aliases expand to more than 50000 values: use fewer aliases of aliases")
}
