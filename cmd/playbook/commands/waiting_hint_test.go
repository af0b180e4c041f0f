package commands

import (
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/engine"
)

// `run` follows a step that waits with the command that ends the wait:
// an approval is decided with approve or reject, an event is sent.
func TestAWaitingStepsLineSaysHowToEndTheWait(t *testing.T) {
	event := engine.Event{Type: "step_waiting", Step: "landed", Message: "waiting for event file_landed"}
	require.Equal(t, "waiting for event file_landed; send it with `playbook send sen-1 file_landed --data '{...}' --address x:1`",
		describeEvent(event, "sen-1", " --address x:1"))
	approval := engine.Event{Type: "step_waiting", Step: "gate", Message: "waiting for approval: ship it?"}
	require.Equal(t, "waiting for approval: ship it?; decide with `playbook approve r gate` or `playbook reject r gate` (`playbook pending r` shows its inputs)",
		describeEvent(approval, "r", ""))
}
