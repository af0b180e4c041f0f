package engine

import (
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
)

// Which wait_event steps an event goes to, and why none would take it, in
// the words a sender reads.
func TestEventTakers(t *testing.T) {
	r := slotsRun(t, `metadata: {name: t}
workflow:
  - {step: a, tool: {kind: wait_event, event: go}}
  - {step: b, tool: {kind: wait_event, event: go}}
  - {step: c, tool: {kind: wait_event, event: stop}, depends_on: [a]}
`)
	takers, err := r.EventTakers("go", nil)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, takers, "every step waiting for it, started or not")
	takers, err = r.EventTakers("go", map[string]bool{"a": true})
	require.NoError(t, err)
	require.Equal(t, []string{"b"}, takers)
	_, err = r.EventTakers("go", map[string]bool{"a": true, "b": true})
	require.EqualError(t, err, "event go was already received by step a, b: a wait_event step takes one event")
	_, err = r.EventTakers("other", nil)
	require.EqualError(t, err, "no step of playbook t waits for event other (its wait_event steps wait for: go, stop)")
	r.states["c"].Status = contract.StatusSkipped
	_, err = r.EventTakers("stop", nil)
	require.EqualError(t, err, "no step waits for event stop any more (c is skipped)")

	none := slotsRun(t, "metadata: {name: t}\nworkflow:\n  - {step: a, tool: {kind: noop}}\n")
	_, err = none.EventTakers("go", nil)
	require.EqualError(t, err, "playbook t has no wait_event step: it takes no event")
}

// A waiting step makes the run `waiting`, says for what and how to send
// it, and is not an approval; its timeout decides by on_timeout.
func TestAwaitEventAndTimeout(t *testing.T) {
	r := slotsRun(t, `metadata: {name: t}
workflow:
  - {step: a, tool: {kind: wait_event, event: go, timeout: 1m, on_timeout: complete}}
  - {step: b, tool: {kind: wait_event, event: go, timeout: 1m}}
`)
	r.AwaitEvent("a")
	require.True(t, r.WaitsForPerson())
	require.Empty(t, r.Approvals())
	require.Contains(t, r.State("a").Note(), "waiting for event go since ")
	require.Contains(t, r.State("a").Note(), "playbook send t-1 go --data '{...}'")
	o := r.EventTimedOut("a")
	require.Nil(t, o.Err)
	require.Equal(t, true, o.Result.(map[string]any)["timed_out"])
	require.Nil(t, o.Result.(map[string]any)["data"])
	o = r.EventTimedOut("b")
	require.Equal(t, contract.ErrTimeout, o.Err.Type)
	require.Equal(t, "no event go within 1m0s (on_timeout: fail)", o.Err.Message)
}
