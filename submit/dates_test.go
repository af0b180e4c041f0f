package submit

import (
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/spec"
)

// A date or time written plainly in a value is refused where a playbook
// is submitted, at its line, with the text quoted as the fix: YAML reads
// it as a timestamp, which a step would see as 2026-01-02T00:00:00Z and
// which equals no text. Parse, which replays runs started before, still
// reads it as it did. Quoted, or where a field wants text (a wait's
// until), it is the text written.
func TestUnquotedDatesRefusedAtSubmission(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"workload default", "metadata: {name: x}\nworkload: {day: 2026-01-02}\nworkflow:\n  - step: a\n",
			`x.yaml:2: workload.day: YAML reads an unquoted 2026-01-02 as a timestamp, which steps would see as 2026-01-02T00:00:00Z: quote it ("2026-01-02") for the text`},
		{"loop list", "metadata: {name: x}\nworkflow:\n  - step: a\n    loop: {in: [\"2026-01-01\", 2026-01-02]}\n    tool: {kind: noop, result: \"{{ item }}\"}\n",
			`x.yaml:4: step "a": loop.in[1]: YAML reads an unquoted 2026-01-02 as a timestamp, which steps would see as 2026-01-02T00:00:00Z: quote it ("2026-01-02") for the text`},
		{"env", "metadata: {name: x}\nworkflow:\n  - step: a\n    tool: {kind: shell, command: echo, env: {P: 2026-01-02T06:30:00+02:00}}\n",
			`x.yaml:4: step "a": env.P: YAML reads an unquoted 2026-01-02T06:30:00+02:00 as a timestamp, which steps would see as 2026-01-02T06:30:00+02:00: quote it ("2026-01-02T06:30:00+02:00") for the text`},
		{"a result, nested", "metadata: {name: x}\nworkflow:\n  - step: a\n    tool:\n      kind: noop\n      result: {at: [2026-01-02 10:00:00]}\n",
			`x.yaml:6: step "a": result.at[0]: YAML reads an unquoted 2026-01-02 10:00:00 as a timestamp, which steps would see as 2026-01-02T10:00:00Z: quote it ("2026-01-02 10:00:00") for the text`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := spec.Parse("x.yaml", []byte(c.src))
			require.NoError(t, err, "Parse reads what runs in flight may hold")
			_, err = ParseStrict("x.yaml", []byte(c.src), "")
			require.EqualError(t, err, c.want)
		})
	}

	pb, err := ParseStrict("x.yaml", []byte(`metadata: {name: x}
workload: {day: "2026-01-02", tags: [2026-01-02x]}
workflow:
  - step: a
    tool: {kind: wait, until: 2026-01-02T06:00:00Z}
`), "")
	require.NoError(t, err)
	require.Equal(t, "2026-01-02", pb.Workload["day"])
	require.Equal(t, "2026-01-02T06:00:00Z", pb.Steps[0].Tool.Spec["until"])
}

// `--set` reads a date as the text written, alone or within a list or a
// mapping.
func TestSetReadsDatesAsText(t *testing.T) {
	for text, want := range map[string]any{
		"2026-01-02":               "2026-01-02",
		"[2026-01-01, 2026-01-02]": []any{"2026-01-01", "2026-01-02"},
		"{from: 2026-01-01, n: 3}": map[string]any{"from": "2026-01-01", "n": 3},
	} {
		require.Equal(t, want, SetText(text).value(), text)
	}
}
