package playbookwf

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"playbook/interpreter/contract"
)

// A trigger's registration is a workflow (runs.ApplyTrigger starts it):
// a webhook's waits for re-applies and answers its registration to the
// workers' /hooks/NAME; an after trigger's runs the watch activity
// (contract.TriggerWatchActivity, the worker's) round after round, each
// from the cursor the last one returned, so that an upstream run that
// ended while no worker ran is answered once one does.

// triggerRounds bounds a trigger workflow's history: it continues as new
// after that many rounds (an hour of watching, or re-applies).
const triggerRounds = 60

// PlaybookTrigger is a trigger's registration, and an after trigger's
// watch.
func PlaybookTrigger(ctx workflow.Context, in contract.TriggerInput) error {
	reg, cursor := in.Registration, in.Cursor
	if err := workflow.SetQueryHandler(ctx, contract.QueryTrigger, func() (contract.TriggerRegistration, error) { return reg, nil }); err != nil {
		return err
	}
	apply := workflow.GetSignalChannel(ctx, contract.SignalTriggerApply)
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: contract.TriggerWatchSpan + time.Minute,
		HeartbeatTimeout:    20 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumInterval: 30 * time.Second},
	})
	for range triggerRounds {
		if reg.Upstream == "" || cursor == nil {
			var next contract.TriggerRegistration
			apply.Receive(ctx, &next)
			reg = next
			continue
		}
		var next contract.TriggerCursor
		if err := workflow.ExecuteActivity(actx, contract.TriggerWatchActivity, contract.TriggerInput{Registration: reg, Cursor: cursor}).Get(ctx, &next); err == nil {
			cursor = &next
		}
		reg = latest(apply, reg)
	}
	reg = latest(apply, reg)
	return workflow.NewContinueAsNewError(ctx, contract.TriggerWorkflowName, contract.TriggerInput{Registration: reg, Cursor: cursor})
}

// latest is the last registration a re-apply sent, or reg: each replaces
// the one before whole (decoded into reg, a registration would keep the
// fields the new one leaves out).
func latest(apply workflow.ReceiveChannel, reg contract.TriggerRegistration) contract.TriggerRegistration {
	for {
		var next contract.TriggerRegistration
		if !apply.ReceiveAsync(&next) {
			return reg
		}
		reg = next
	}
}
