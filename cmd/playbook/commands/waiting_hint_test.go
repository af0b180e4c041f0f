package commands

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/engine"
	"playbook/interpreter/spec"
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

// `run` of a run that waits for its concurrency slot says so, and when it
// has it: it printed nothing while queued.
func TestAQueuedRunsLinesSayWhereItStands(t *testing.T) {
	queued := engine.Event{Type: "concurrency_queued", Message: `queued behind dep-1 (concurrency key "web", limit 1; 1st in the queue)`}
	require.Equal(t, queued.Message, describeEvent(queued, "dep-2", ""))
	granted := engine.Event{Type: "concurrency_granted", Message: `holds a slot of concurrency key "web"`}
	require.Equal(t, granted.Message, describeEvent(granted, "dep-2", ""))
}

// `run`'s lines to decide an approval are whole, as pending prints them:
// with its inputs, and --by an approver when it names approvers (the
// user's own name would be refused).
func TestAnApprovalsLinesAreWhole(t *testing.T) {
	pb, err := spec.Parse("g.yaml", []byte("metadata: {name: g}\nworkflow:\n  - step: gate\n    tool: {kind: approval, message: ship, approvers: [alice, bob], inputs: {ticket: null}}\n"))
	require.NoError(t, err)
	p := newProgress(pb, io.Discard, " --address x:1")
	e := engine.Event{Type: "step_waiting", Step: "gate", Message: "waiting for approval: ship"}
	require.Equal(t, "waiting for approval: ship; decide with `playbook approve r gate --set ticket=<ticket> --by alice --address x:1` or `playbook reject r gate --reason '...' --by alice --address x:1` (`playbook pending r --address x:1` shows its inputs)",
		p.describe(e, "r"))
}
