package worker

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"

	"playbook/interpreter/contract"
	"playbook/runs"
)

// watchEvery is how often a trigger's watch lists the upstream's ended
// runs.
const watchEvery = time.Second

// triggerWatch is an after trigger's watch activity (the workflow is
// playbookwf.PlaybookTrigger): it asks the server through the worker's
// client.
type triggerWatch struct{ client client.Client }

// Watch answers the upstream runs that end for contract.TriggerWatchSpan,
// from the cursor its last heartbeat recorded when it is a retry, and
// returns where it stands.
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
	end := time.Now().Add(contract.TriggerWatchSpan)
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
