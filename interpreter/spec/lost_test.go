package spec

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseLostAttempts(t *testing.T) {
	pb, err := Parse("x.yaml", []byte(`
metadata: {name: x}
lost_attempts: 5
workflow:
  - step: inherits
    tool: {kind: noop}
  - step: own
    lost_attempts: 1
    tool: {kind: noop}
  - step: once
    on_lost: fail
    tool: {kind: noop}
  - step: zero
    lost_attempts: 0
    on_lost: retry
    tool: {kind: noop}
`))
	require.NoError(t, err)
	require.Equal(t, 5, pb.LostAttempts)
	got := map[string]int{}
	for _, s := range pb.Steps {
		if s.Tool != nil {
			got[s.Name] = s.LostAttempts
		}
	}
	require.Equal(t, map[string]int{"inherits": 5, "own": 1, "once": 0, "zero": 0}, got)

	pb, err = Parse("x.yaml", []byte("metadata: {name: x}\nworkflow:\n  - step: a\n    tool: {kind: noop}\n"))
	require.NoError(t, err)
	require.Equal(t, DefaultLostAttempts, pb.Step("a").LostAttempts, "3 when nothing says")
}

func TestParseLostAttemptsErrors(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"negative", `
metadata: {name: x}
workflow:
  - step: a
    lost_attempts: -1
    tool: {kind: noop}
`, `x.yaml:5: step "a": lost_attempts must not be negative`},
		{"not a number", `
metadata: {name: x}
lost_attempts: many
workflow: [{step: a}]
`, `x.yaml:3: lost_attempts must be a whole number, not "many"`},
		{"unknown on_lost", `
metadata: {name: x}
workflow:
  - step: a
    on_lost: ignore
    tool: {kind: noop}
`, `x.yaml:5: step "a": on_lost must be retry or fail, not "ignore"`},
		{"contradiction", `
metadata: {name: x}
workflow:
  - step: a
    on_lost: fail
    lost_attempts: 2
    tool: {kind: noop}
`, `x.yaml:6: step "a": lost_attempts: 2 contradicts on_lost: fail (a lost attempt fails the step)`},
		{"no tool", `
metadata: {name: x}
workflow:
  - step: a
    on_lost: fail
`, `x.yaml:5: step "a": on_lost needs a tool`},
		{"playbook step", `
metadata: {name: x}
workflow:
  - step: a
    lost_attempts: 1
    tool: {kind: playbook, path: sub.yaml}
`, `x.yaml:5: step "a": lost_attempts does not apply to a playbook step: the sub-playbook's own steps retry their lost attempts`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.src))
			require.Error(t, err)
			require.Equal(t, tc.want, err.Error())
		})
	}
}
