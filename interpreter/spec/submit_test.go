package spec

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSubmitChecks(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"attempts over the bound", `
metadata: {name: x}
workflow:
  - {step: a, tool: {kind: shell, command: "true"}, retry: 3000000000}
`, `x.yaml:4: step "a": retry: a step makes at most 1000000 attempts; this asks for 3000000000`},
		{"max_attempts over the bound", `
metadata: {name: x}
workflow:
  - step: a
    tool: {kind: shell, command: "true"}
    retry: {max_attempts: 1000001}
`, `x.yaml:6: step "a": retry.max_attempts: a step makes at most 1000000 attempts; this asks for 1000001`},
		{"retries over the bound", `
metadata: {name: x}
workflow:
  - {step: a, tool: {kind: shell, command: "true"}, retries: 1000000}
`, `x.yaml:4: step "a": retries: a step makes at most 1000000 attempts; this asks for 1000001`},
		{"max_retries over the bound", `
metadata: {name: x}
failure_handlers:
  - name: h
    rules: [{match_all_exit_codes: true, max_retries: 3000000000}]
workflow:
  - {step: a, tool: {kind: shell, command: "true"}, failure_handler: h}
`, `x.yaml:5: max_retries: a step makes at most 1000000 attempts; this asks for 3000000001`},
		{"workload keys that read alike", `
metadata: {name: x}
workload:
  1: one
  1.0: uno
workflow:
  - {step: a}
`, `x.yaml:5: workload: keys 1 (line 4) and 1.0 are the same key "1" once read: write it once`},
		{"nested tool keys that read alike", `
metadata: {name: x}
workflow:
  - step: a
    tool:
      kind: noop
      result: {flags: {true: 1, True: 2}}
`, `x.yaml:7: step "a": result: keys true (line 7) and True are the same key "true" once read: write it once`},
		{"a playbook tool in a loop", `
metadata: {name: x}
workflow:
  - step: a
    loop: {in: [1, 2]}
    tool: {kind: playbook, path: sub.yaml}
`, `x.yaml:4: step "a": a playbook tool cannot run in a loop: write the loop inside the sub-playbook, or list its runs as steps`},
		{"heartbeat_timeout below a second", `
metadata: {name: x}
workflow:
  - step: a
    heartbeat_timeout: 500ms
    tool: {kind: shell, command: "sleep 3"}
`, `x.yaml:5: step "a": heartbeat_timeout must be at least 1s, not 500ms: a running attempt first heartbeats after 200ms, and a shorter silence would lose attempts whose worker is alive (leave it out for the default, 30s)`},
		{"heartbeat_timeout 0", `
metadata: {name: x}
workflow:
  - step: a
    heartbeat_timeout: 0s
    tool: {kind: shell, command: "true"}
`, `x.yaml:5: step "a": heartbeat_timeout must be at least 1s, not 0s: a running attempt first heartbeats after 200ms, and a shorter silence would lose attempts whose worker is alive (leave it out for the default, 30s)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pb, err := Parse("x.yaml", []byte(tc.src))
			require.NoError(t, err, "a frozen playbook still parses: runs in flight keep replaying")
			require.EqualError(t, pb.CheckSubmit(), tc.want)
		})
	}
	pb, err := Parse("x.yaml", []byte("metadata: {name: x}\nworkflow:\n  - {step: a, retry: 1000000, tool: {kind: shell, command: 'true'}}\n"))
	require.NoError(t, err)
	require.NoError(t, pb.CheckSubmit(), "the bound itself is allowed")
	pb, err = Parse("x.yaml", []byte("metadata: {name: x}\nworkflow:\n  - {step: a, heartbeat_timeout: 1s, tool: {kind: shell, command: 'true'}}\n"))
	require.NoError(t, err)
	require.NoError(t, pb.CheckSubmit(), "a heartbeat_timeout of the floor itself is allowed")
}

// Keys written alike (1 and "1") were already refused by the YAML decoder;
// the error is now one line.
func TestKeysWrittenAlikeAreOneLineErrors(t *testing.T) {
	_, err := Parse("x.yaml", []byte("metadata: {name: x}\nworkload:\n  1: one\n  \"1\": uno\nworkflow:\n  - {step: a}\n"))
	require.EqualError(t, err, `x.yaml:4: workload: keys 1 (line 3) and "1" are the same key "1" once read: write it once`)
}
