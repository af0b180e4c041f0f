package runs

import (
	"context"
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
)

// Events asks a run for its events after seq, page by page. A bound
// (while following a live run) limits the whole question: a slow answer
// yields the events so far and no error, to be asked again on the next
// tick; 0 waits as long as ctx does.
func Events(ctx context.Context, c Client, workflowID, runID string, seq int, bound time.Duration) ([]engine.Event, error) {
	bounded := bound > 0
	if bounded {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, bound)
		defer cancel()
	}
	var evs []engine.Event
	for {
		v, err := c.QueryWorkflow(ctx, workflowID, runID, contract.QueryEvents, seq, contract.EventsPage, contract.EventsPageBytes)
		var page []engine.Event
		if err == nil {
			err = v.Get(&page)
		}
		if bounded && ctx.Err() != nil {
			return evs, nil
		}
		if err != nil {
			return evs, notFound(workflowID, err)
		}
		evs = append(evs, page...)
		// A page is cut by count or by size: the events end at the first
		// empty one (a worker from before pages answered with every event
		// at once, and then with none).
		if len(page) == 0 {
			return evs, nil
		}
		seq = page[len(page)-1].Seq
	}
}
