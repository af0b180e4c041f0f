package worker

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"playbook/interpreter/contract"
	"playbook/runs"
)

// A trigger's registration is a workflow (runs.ApplyTrigger starts it):
// a webhook's waits for re-applies and answers its registration to the
// workers' /hooks/NAME; an after trigger's runs the watch activity round
// after round, each from the cursor the last one returned, so that an
// upstream run that ended while no worker ran is answered once one does.
const (
	// watchSpan is how long one watch activity runs before it returns its
	// cursor to the history (a re-apply takes effect at the next round).
	watchSpan = time.Minute
	// watchEvery is how often a watch lists the upstream's ended runs.
	watchEvery = time.Second
	// triggerRounds bounds a trigger workflow's history: it continues as
	// new after that many rounds (an hour of watching, or re-applies).
	triggerRounds = 60
)

// TriggerWorkflow is a trigger's registration, and an after trigger's watch.
func TriggerWorkflow(ctx workflow.Context, in contract.TriggerInput) error {
	reg, cursor := in.Registration, in.Cursor
	if err := workflow.SetQueryHandler(ctx, contract.QueryTrigger, func() (contract.TriggerRegistration, error) { return reg, nil }); err != nil {
		return err
	}
	apply := workflow.GetSignalChannel(ctx, contract.SignalTriggerApply)
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: watchSpan + time.Minute,
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

// triggerWatch is the watch activity: it asks the server through the
// worker's client.
type triggerWatch struct{ client client.Client }

// Watch answers the upstream runs that end for watchSpan, from the cursor
// its last heartbeat recorded when it is a retry, and returns where it
// stands.
func (t triggerWatch) Watch(ctx context.Context, in contract.TriggerInput) (contract.TriggerCursor, error) {
	cursor := *in.Cursor
	if activity.HasHeartbeatDetails(ctx) {
		var beat contract.TriggerCursor
		if activity.GetHeartbeatDetails(ctx, &beat) == nil {
			cursor = beat
		}
	}
	namespace := activity.GetInfo(ctx).Namespace
	answered := map[string]bool{}
	end := time.Now().Add(watchSpan)
	tick := time.NewTicker(watchEvery)
	defer tick.Stop()
	for {
		next, err := runs.WatchAfter(ctx, t.client, namespace, in.Registration, cursor, answered)
		cursor = next
		activity.RecordHeartbeat(ctx, cursor)
		if err != nil {
			return cursor, err
		}
		if time.Now().After(end) {
			return cursor, nil
		}
		select {
		case <-ctx.Done():
			return cursor, ctx.Err()
		case <-tick.C:
		}
	}
}
