package playbookwf

import (
	"go.temporal.io/sdk/workflow"

	"playbook/interpreter/engine"
)

// recordCancelReasons records the reasons signalled so far. Workflow code
// cannot read a cancel request's reason, so a client that has one (playbook
// cancel --reason) signals it first; the signal and the cancel request can
// land in the same workflow task, so the cancel handler reads the signals
// before acting.
func recordCancelReasons(c workflow.ReceiveChannel, run *engine.Run) {
	var reason string
	for c.ReceiveAsync(&reason) {
		run.RecordCancelReason(reason)
	}
}
