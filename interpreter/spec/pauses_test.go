package spec

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The errors a wait or an approval step gets are pinned: one line, at the
// line of the field at fault.
func TestPauseStepErrors(t *testing.T) {
	cases := []struct{ name, steps, want string }{
		{"wait with neither", `
  - step: a
    tool: {kind: wait}`, `flows/x.yaml:5: step "a": wait tool needs a duration or an until`},
		{"wait with both", `
  - step: a
    tool: {kind: wait, duration: 1s, until: "2026-01-01T00:00:00Z"}`, `flows/x.yaml:5: step "a": wait tool: give a duration or an until, not both`},
		{"wait bad duration", `
  - step: a
    tool: {kind: wait, duration: soon}`, `flows/x.yaml:5: step "a": tool duration: bad duration soon (write e.g. 30s, 10m, 1h30m)`},
		{"wait until not a time", `
  - step: a
    tool: {kind: wait, until: tomorrow}`, `flows/x.yaml:5: step "a": wait tool: until "tomorrow" is not an RFC 3339 time (e.g. 2026-01-02T06:00:00Z)`},
		{"wait step timeout", `
  - step: a
    tool: {kind: wait, duration: 1s}
    timeout: 5s`, `flows/x.yaml:6: step "a": timeout does not apply to a wait step: it runs no attempt to bound`},
		{"approval bad on_timeout", `
  - step: a
    tool: {kind: approval, timeout: 1h, on_timeout: maybe}`, `flows/x.yaml:5: step "a": approval tool: on_timeout must be approve, reject or fail, not "maybe"`},
		{"approval on_timeout without timeout", `
  - step: a
    tool: {kind: approval, on_timeout: approve}`, `flows/x.yaml:5: step "a": approval tool: on_timeout needs a timeout in the tool (tool: {kind: approval, timeout: 1h, on_timeout: ...}): how long the approval waits`},
		{"approval inputs not a mapping", `
  - step: a
    tool: {kind: approval, inputs: [ticket]}`, `flows/x.yaml:5: step "a": tool inputs: must be a mapping of input names to their defaults`},
		{"approval input templated", `
  - step: a
    tool: {kind: approval, inputs: {ticket: "{{ workload.t }}"}}`, `flows/x.yaml:5: step "a": approval tool: inputs holds a template; only message is rendered`},
		{"approval approvers not names", `
  - step: a
    tool: {kind: approval, approvers: alice}`, `flows/x.yaml:5: step "a": tool approvers: must be a list of names`},
		{"approval step timeout", `
  - step: a
    tool: {kind: approval}
    timeout: 2h`, `flows/x.yaml:6: step "a": timeout bounds an activity's attempt, and an approval runs none: write the approval's timeout in its tool (tool: {kind: approval, timeout: 2h, on_timeout: fail})`},
		{"approval retried", `
  - step: a
    tool: {kind: approval}
    retry: 3`, `flows/x.yaml:4: step "a": retry does not apply to an approval step: it runs no attempt to repeat`},
		{"approval in a loop", `
  - step: a
    tool: {kind: approval}
    loop: {in: "[1, 2]", iterator: x}`, `flows/x.yaml:4: step "a": an approval step cannot run in a loop: list the steps one by one`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("flows/x.yaml", []byte("metadata: {name: x}\nworkload: {t: x}\nworkflow:"+tc.steps+"\n"))
			require.Error(t, err)
			require.Equal(t, tc.want, err.Error())
		})
	}
}

// An unquoted time, which YAML reads as a timestamp, is a wait's until as
// written.
func TestWaitUntilUnquoted(t *testing.T) {
	pb, err := Parse("x.yaml", []byte("metadata: {name: x}\nworkflow:\n  - step: a\n    tool: {kind: wait, until: 2026-01-02T06:00:00Z}\n"))
	require.NoError(t, err)
	require.Equal(t, "2026-01-02T06:00:00Z", pb.Step("a").Tool.Spec["until"])
}

func TestApprovalFieldsRead(t *testing.T) {
	pb, err := Parse("x.yaml", []byte(`
metadata: {name: x}
workflow:
  - step: gate
    tool: {kind: approval, message: "ok?", inputs: {ticket: "", replicas: 3}, approvers: [alice], timeout: 90, on_timeout: approve}
  - step: nap
    tool: {kind: wait, duration: 2s}
`))
	require.NoError(t, err)
	a := pb.Step("gate").Tool.Approval()
	require.Equal(t, Approval{Inputs: map[string]any{"ticket": "", "replicas": 3}, Approvers: []string{"alice"}, Timeout: 90 * time.Second, OnTimeout: "approve"}, a)
	require.Equal(t, 2*time.Second, pb.Step("nap").Tool.WaitDuration())
	require.Equal(t, OnTimeoutFail, (&Tool{Spec: map[string]any{}}).Approval().OnTimeout, "fail is the default")
}

func TestConvertInputs(t *testing.T) {
	declared := map[string]any{"ticket": "", "replicas": 3, "ratio": 0.5, "dry": false, "extra": nil}
	got, err := ConvertInputs(declared, nil, map[string]any{"ticket": "OPS-1", "replicas": 5.0, "ratio": 1, "extra": []any{1}})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"ticket": "OPS-1", "replicas": 5, "ratio": 1.0, "dry": false, "extra": []any{1}}, got)
	for given, want := range map[string]string{
		"replicas": `input replicas must be a whole number (its default is 3), not "many"`,
		"dry":      `input dry must be true or false (its default is false), not "many"`,
		"nosuch":   `input "nosuch" is not declared (declared: dry, extra, ratio, replicas, ticket)`,
	} {
		_, err := ConvertInputs(declared, nil, map[string]any{given: "many"})
		require.EqualError(t, err, want)
	}
	_, err = ConvertInputs(map[string]any{"replicas": 3.0}, map[string]string{"replicas": InputInt}, map[string]any{"replicas": 2.5})
	require.EqualError(t, err, "input replicas must be a whole number (its default is 3), not 2.5", "the type given wins over a default JSON carried")
}
