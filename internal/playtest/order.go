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
	changed chan struct{}
}

// holdAtMost bounds how long, in wall time, an attempt waits for its
// turn: a second run that issued other commands may never deliver the
// result the attempt waits for, and the comparison of commands says so.
// Generous, so that a loaded machine never gives up a turn that was
// coming (which would report a divergence that is not there); it costs
// time only in a case that really diverged.
const holdAtMost = 10 * time.Second

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
	close(d.changed)
	d.changed = make(chan struct{})
}

// hold waits until the attempt of ctx may end (see deliveries).
func (d *deliveries) hold(ctx context.Context) {
	if d.follow == nil {
		return
	}
	info := activity.GetInfo(ctx)
	until := time.After(holdAtMost)
	for {
		d.mu.Lock()
		id := activityKey(info.WorkflowExecution.ID, info.ActivityID)
		key := id + "#" + strconv.Itoa(d.count[id])
		at := d.env.Now().Sub(d.start)
		turn := slices.IndexFunc(d.follow, func(e delivery) bool { return e.key == key })
		waiting := slices.ContainsFunc(d.follow[:max(turn, 0)], func(e delivery) bool { return e.at <= at && !d.done[e.key] })
		changed := d.changed
		d.mu.Unlock()
		if !waiting {
			return
		}
		select {
		case <-changed:
		case <-until:
			return
		}
	}
}

// held is an activity whose attempts end in the order d holds them to.
func held[I, O any](d *deliveries, run func(context.Context, I) (O, error)) func(context.Context, I) (O, error) {
	return func(ctx context.Context, in I) (O, error) {
		out, err := run(ctx, in)
		d.hold(ctx)
		return out, err
	}
}

func (d *deliveries) order() []delivery {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.got)
}
