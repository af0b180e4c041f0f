package spec

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseLocal(t *testing.T) {
	pb, err := Parse("x.yaml", []byte(`
metadata: {name: x}
local: true
workflow:
  - step: shell
    tool: {kind: shell, command: "true"}
  - step: timed
    timeout: 2s
    tool: {kind: http, url: "http://127.0.0.1:1/"}
  - step: python
    local: false
    tool: {kind: python, code: "def main(): pass"}
  - step: noop
    tool: {kind: noop}
  - step: wait
    tool: {kind: wait, duration: 1s}
  - step: route
`))
	require.NoError(t, err)
	require.NoError(t, pb.CheckSubmit())
	local := map[string]bool{}
	for _, s := range pb.Steps {
		local[s.Name] = s.Local
	}
	require.Equal(t, map[string]bool{"shell": true, "timed": true, "python": false, "noop": false, "wait": false, "route": false, "end": false}, local,
		"the playbook's default makes the steps that run an activity local, unless they say local: false")
	require.Equal(t, LocalTimeoutBound, pb.Step("shell").Timeout, "a local step without a timeout gets the bound")
	require.Equal(t, 2*time.Second, pb.Step("timed").Timeout)
	require.Equal(t, time.Duration(0), pb.Step("python").Timeout)

	pb, err = Parse("x.yaml", []byte("metadata: {name: x}\nworkflow:\n  - step: a\n    tool: {kind: shell, command: \"true\"}\n"))
	require.NoError(t, err)
	require.False(t, pb.Step("a").Local, "no step is local unless something says so")
}

// What a local step gives up is refused at submission, one line each; the
// workflow's re-parse accepts the file (and runs such a step as an
// ordinary one), so that a later build may move the bound.
func TestLocalRefusals(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"a timeout over the bound", `
metadata: {name: x}
workflow:
  - step: a
    local: true
    timeout: 6s
    tool: {kind: shell, command: "true"}
`, `x.yaml:6: step "a": timeout 6s is over the 5s a local step may run: it cannot heartbeat, so an attempt must end within one workflow task (leave local out for a longer step)`},
		{"a timeout over the bound, by the playbook's default", `
metadata: {name: x}
local: true
workflow:
  - step: a
    timeout: 1m
    tool: {kind: shell, command: "true"}
`, `x.yaml:6: step "a": timeout 1m0s is over the 5s a local step may run: it cannot heartbeat, so an attempt must end within one workflow task (give it local: false for a longer step)`},
		{"heartbeat_timeout", `
metadata: {name: x}
workflow:
  - step: a
    local: true
    heartbeat_timeout: 2s
    tool: {kind: shell, command: "true"}
`, `x.yaml:6: step "a": heartbeat_timeout does not apply to a local step: a local activity cannot heartbeat (leave local out for a step that must)`},
		{"on_lost", `
metadata: {name: x}
workflow:
  - step: a
    local: true
    on_lost: fail
    tool: {kind: shell, command: "true"}
`, `x.yaml:6: step "a": on_lost does not apply to a local step: an attempt lost with its worker is run again whenever its workflow task is retried, and no worker counts it`},
		{"lost_attempts", `
metadata: {name: x}
local: true
workflow:
  - step: a
    lost_attempts: 1
    tool: {kind: shell, command: "true"}
`, `x.yaml:6: step "a": lost_attempts does not apply to a local step: an attempt lost with its worker is run again whenever its workflow task is retried, and no worker counts it`},
		{"a queue", `
metadata: {name: x}
queue: gpu
local: true
workflow:
  - step: a
    tool: {kind: shell, command: "true"}
`, `x.yaml:6: step "a": a local step runs on the worker that runs its run's workflow: queue "gpu" does not apply (give it local: false, or leave queue out)`},
		{"a playbook step", `
metadata: {name: x}
workflow:
  - step: a
    local: true
    tool: {kind: playbook, path: sub.yaml}
`, `x.yaml:5: step "a": local does not apply to a playbook step: it runs as a child workflow (give the sub-playbook's own steps local: true)`},
		{"a noop step", `
metadata: {name: x}
workflow:
  - {step: a, local: true, tool: {kind: noop}}
`, `x.yaml:4: step "a": local does not apply to a noop step: it is decided in the workflow, without an activity`},
		{"an approval step", `
metadata: {name: x}
workflow:
  - {step: a, local: true, tool: {kind: approval}}
`, `x.yaml:4: step "a": local does not apply to an approval step: it waits in the workflow, without an activity`},
		{"a fail step", `
metadata: {name: x}
workflow:
  - {step: a, local: true, tool: {kind: fail, type: no_input, message: no}}
`, `x.yaml:4: step "a": local does not apply to a fail step: it fails at once, in the workflow`},
		{"no tool", `
metadata: {name: x}
workflow:
  - {step: a, local: true}
`, `x.yaml:4: step "a": local applies to a step's tool, and this step has none`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pb, err := Parse("x.yaml", []byte(tc.src))
			require.NoError(t, err, "the workflow's re-parse accepts it")
			require.EqualError(t, pb.CheckSubmit(), tc.want)
		})
	}
}

func TestLocalIsABoolean(t *testing.T) {
	_, err := Parse("x.yaml", []byte("metadata: {name: x}\nworkflow:\n  - step: a\n    local: yes please\n    tool: {kind: shell, command: \"true\"}\n"))
	require.EqualError(t, err, `x.yaml:4: step "a": local must be true or false, not yes please`)
}
