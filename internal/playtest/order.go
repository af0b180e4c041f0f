package playtest

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
)

// delivery is an activity's result reaching its workflow: which one (its
// workflow, activity ID and how many results of that ID came before) and
// when, on the run's clock from its start.
type delivery struct {
	key string
	at  time.Duration
}

// deliveries orders the activities' results of a case's run. The test
// environment runs each attempt on its own goroutine, so results of
// attempts running side by side reach their workflows in whatever order
// the goroutines end; a history fixes that order. The first run notes
// it; the second run, given it (follow), holds each attempt back until
// the results delivered before its own in the first run, at no later
// time on the run's clock, have been delivered again: the second run is
// driven by the same results in the same order, as a replay of the first
// run's history would be.
type deliveries struct {
	env    *testsuite.TestWorkflowEnvironment
	start  time.Time
	follow []delivery

	mu      sync.Mutex
	got     []delivery
	done    map[string]bool
	count   map[string]int
	working int // attempts at work: started, not yet held
	changed chan struct{}
}

// stallAfter is how long, in wall time, an attempt waits for its turn
// while nothing happens: no result delivered, no attempt starting or
// ending its work, and none at work. A second run that issued other
// commands may never deliver the result the attempt waits for, and the
// comparison of commands says so. A bound on the wait's progress, not on
// its length: a loaded machine that delivers slowly, or a step that runs
// long, never gives up a turn that was coming (which would report a
// divergence that is not there); it costs time only in a case that
// really diverged.
const stallAfter = 10 * time.Second

func newDeliveries(env *testsuite.TestWorkflowEnvironment, start time.Time, follow []delivery) *deliveries {
	return &deliveries{env: env, start: start, follow: follow, done: map[string]bool{}, count: map[string]int{}, changed: make(chan struct{})}
}

func activityKey(workflowID, activityID string) string { return workflowID + " " + activityID }

// delivered notes a result reaching its workflow (the test environment's
// main loop tells it).
func (d *deliveries) delivered(workflowID, activityID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id := activityKey(workflowID, activityID)
	key := id + "#" + strconv.Itoa(d.count[id])
	d.count[id]++
	d.got = append(d.got, delivery{key: key, at: d.env.Now().Sub(d.start)})
	d.done[key] = true
	d.change()
}

// work notes an attempt starting its work (by) or ending it (-1).
func (d *deliveries) work(by int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.working += by
	d.change()
}

// change wakes the attempts waiting for their turn; d.mu is held.
func (d *deliveries) change() {
	close(d.changed)
	d.changed = make(chan struct{})
}

// hold waits until the attempt of ctx may end (see deliveries).
func (d *deliveries) hold(ctx context.Context) {
	if d.follow == nil {
		return
	}
	info := activity.GetInfo(ctx)
	for {
		d.mu.Lock()
		id := activityKey(info.WorkflowExecution.ID, info.ActivityID)
		key := id + "#" + strconv.Itoa(d.count[id])
		at := d.env.Now().Sub(d.start)
		turn := slices.IndexFunc(d.follow, func(e delivery) bool { return e.key == key })
		// The results before its own in the first run, delivered by then
		// on the run's clock, or by the time its own was: a result
		// delivered after a retry's delay came before one whose attempt
		// started earlier but took longer (on a loaded machine, its
		// goroutine), and the clock gets there again.
		if turn >= 0 {
			at = max(at, d.follow[turn].at)
		}
		waiting := slices.ContainsFunc(d.follow[:max(turn, 0)], func(e delivery) bool { return e.at <= at && !d.done[e.key] })
		changed, working := d.changed, d.working > 0
		d.mu.Unlock()
		if !waiting {
			return
		}
		var stalled <-chan time.Time
		if !working {
			stalled = time.After(stallAfter)
		}
		select {
		case <-changed:
		case <-stalled:
			return
		}
	}
}

// held is an activity whose attempts end in the order d holds them to.
func held[I, O any](d *deliveries, run func(context.Context, I) (O, error)) func(context.Context, I) (O, error) {
	return func(ctx context.Context, in I) (O, error) {
		d.work(1)
		out, err := run(ctx, in)
		d.work(-1)
		d.hold(ctx)
		return out, err
	}
}

func (d *deliveries) order() []delivery {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.got)
}
