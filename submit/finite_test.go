package submit

import (
	"encoding/json"
	"testing"

	"playbook/interpreter/spec"

	"github.com/stretchr/testify/require"
)

// A number JSON cannot carry (.nan, .inf, -.inf) is refused where a
// playbook is submitted, at its line: the workflow could never send it (a
// retry policy, a step's input, the run's input all travel as JSON) and
// would fail its task on every attempt. Parse, which replays runs started
// before, still accepts it.
func TestNonFiniteNumbersRefusedAtSubmission(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"backoff_multiplier .nan", `
metadata: {name: x}
workflow:
  - step: a
    tool: {kind: shell, command: "false"}
    retry:
      max_attempts: 3
      backoff_multiplier: .nan
`, `x.yaml:8: step "a": retry.backoff_multiplier must be a finite number, not .nan`},
		{"backoff_multiplier .inf", `
metadata: {name: x}
workflow:
  - step: a
    tool: {kind: shell, command: "false"}
    retry: {max_attempts: 3, backoff_multiplier: +.Inf}
`, `x.yaml:6: step "a": retry.backoff_multiplier must be a finite number, not +.Inf`},
		{"workload default", `
metadata: {name: x}
workload:
  limits:
    rate: 1.5
    burst: [1, -.inf]
workflow:
  - step: a
`, `x.yaml:6: workload.limits.burst[1] must be a finite number, not -.inf`},
		{"noop result", `
metadata: {name: x}
workflow:
  - step: a
    tool:
      kind: noop
      result: .NaN
`, `x.yaml:7: step "a": result must be a finite number, not .NaN`},
		{"http body", `
metadata: {name: x}
workflow:
  - step: a
    tool:
      kind: http
      url: "http://127.0.0.1:1"
      body: {ratio: .inf}
`, `x.yaml:8: step "a": body.ratio must be a finite number, not .inf`},
		{"shell env", `
metadata: {name: x}
workflow:
  - step: a
    tool: {kind: shell, command: "echo $R", env: {R: .nan}}
`, `x.yaml:5: step "a": env.R must be a finite number, not .nan`},
		{"loop list", `
metadata: {name: x}
workflow:
  - step: a
    tool: {kind: noop, result: "{{ item }}"}
    loop:
      in: [1, 2,
        .nan]
`, `x.yaml:8: step "a": loop.in[2] must be a finite number, not .nan`},
		{"through an alias", `
metadata: {name: x}
workload: {big: &big .inf}
workflow:
  - step: a
    tool: {kind: noop, result: {limit: *big}}
`, "x.yaml:3: workload.big must be a finite number, not .inf\n" +
			`x.yaml:6: step "a": result.limit must be a finite number, not .inf`},
		{"schedule workload", `
metadata: {name: x}
schedule:
  cron: "@daily"
  workload: {rate: .nan}
workload: {rate: 1.5}
workflow:
  - step: a
`, `x.yaml:5: schedule.workload.rate must be a finite number, not .nan`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := spec.Parse("x.yaml", []byte(c.src))
			require.NoError(t, err, "Parse accepts what runs in flight may hold")
			_, err = ParseStrict("x.yaml", []byte(c.src), "")
			require.Error(t, err)
			require.Equal(t, c.want, err.Error())
		})
	}

	// What was an error stays one, worded as before.
	_, err := spec.Parse("x.yaml", []byte("metadata: {name: x}\nworkflow:\n  - step: a\n    tool: {kind: shell, command: \"false\"}\n    retry: {backoff_multiplier: -.inf}\n"))
	require.EqualError(t, err, `x.yaml:5: step "a": retry.backoff_multiplier must be a number >= 1, not "-.inf"`)

	// Finite numbers, and the words nan and inf as text, are fine.
	pb, err := ParseStrict("x.yaml", []byte(`
metadata: {name: x}
workload: {rate: 1e300, tiny: -1.5e-300, words: [nan, inf, ".nan"]}
workflow:
  - step: a
    tool: {kind: noop, result: {n: 99999999999999999999}}
    retry: {backoff_multiplier: 1.5}
`), "")
	require.NoError(t, err)
	_, err = json.Marshal([]any{pb.Workload, pb.Steps[0].Tool.Spec, pb.Steps[0].Retry})
	require.NoError(t, err)
}

// `run --set` reads YAML, and `--input` keeps a number's digits: either
// can give a number JSON cannot carry, which the run's input could not
// hold. A string key takes the text as it is.
func TestNonFiniteOverridesRefused(t *testing.T) {
	pb := &spec.Playbook{File: "x.yaml", Workload: map[string]any{
		"version": "1.0", "n": 1, "ratio": 0.5, "tags": []any{}, "any": nil,
		"db": map[string]any{"host": "h"},
	}}
	refused := []struct {
		name string
		in   any
		want string
	}{
		{"ratio", SetText(".nan"), `x.yaml: workload.ratio must be a finite number, not .nan`},
		{"ratio", SetText("-.Inf"), `x.yaml: workload.ratio must be a finite number, not -.Inf`},
		{"ratio", json.Number("1e400"), `x.yaml: workload.ratio must be a finite number, not 1e400`},
		{"any", SetText(".inf"), `x.yaml: workload.any must be a finite number, not .inf`},
		{"tags", SetText("[1, .nan]"), `x.yaml: workload.tags[1] must be a finite number, not .nan`},
		{"any", map[string]any{"k": []any{json.Number("1"), json.Number("-1e999")}}, `x.yaml: workload.any.k[1] must be a finite number, not -1e999`},
		{"db", map[string]any{"extra": SetText("{x: -.inf}")}, `x.yaml: workload.db.extra.x must be a finite number, not -.inf`},
	}
	for _, c := range refused {
		_, err := CheckOverrides(pb, map[string]any{c.name: c.in})
		require.EqualError(t, err, c.want, "%s=%v", c.name, c.in)
	}
	got, err := CheckOverrides(pb, map[string]any{"version": SetText(".nan"), "n": json.Number("1e3")})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"version": ".nan", "n": 1000}, got)
}
