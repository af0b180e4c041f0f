package runs

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/api/serviceerror"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
)

// Events asks a run for its events after seq, page by page. A bound
// (while following a live run) limits the whole question: a slow answer
// yields the events so far and no error, to be asked again on the next
// tick; 0 waits as long as ctx does, and asks again (slowAsks times in
// all) a question the server gave up on: a query waits for a worker to
// answer it, which a busy one may not do in the server's time.
func Events(ctx context.Context, c Client, workflowID, runID string, seq int, bound time.Duration) ([]engine.Event, error) {
	bounded := bound > 0
	if bounded {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, bound)
		defer cancel()
	}
	var evs []engine.Event
	for asked := 1; ; asked++ {
		v, err := c.QueryWorkflow(ctx, workflowID, runID, contract.QueryEvents, seq, contract.EventsPage, contract.EventsPageBytes)
		var page []engine.Event
		if err == nil {
			err = v.Get(&page)
		}
		// The server's answer that the time ran out may come before this
		// side's own deadline does.
		slow := ctx.Err() != nil || timedOut(err)
		if bounded && slow {
			return evs, nil
		}
		if slow && ctx.Err() == nil && asked < slowAsks {
			continue
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
		asked = 0
	}
}

// slowAsks is how many times Events asks for a page the server gave up on.
const slowAsks = 3

// timedOut tells whether err is the server's, or the client's, deadline.
func timedOut(err error) bool {
	var deadline *serviceerror.DeadlineExceeded
	return errors.As(err, &deadline) || errors.Is(err, context.DeadlineExceeded)
}
