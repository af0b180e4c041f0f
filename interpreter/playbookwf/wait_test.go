package playbookwf

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

// waitResult is what waitOrder saw.
type waitResult struct {
	Order []string
	// Asked: the waitSet asked changeWaitInOrder.
	Asked bool
}

// waitOrder waits, with a waitSet, on a channel and on the futures named
// in futures, added in that order; while it waits, a coroutine makes them
// ready in one go in the order of settle (a name in no future: a value on
// the channel). It returns the order their functions ran in.
func waitOrder(ctx workflow.Context, futures, settle []string) (waitResult, error) {
	w := &waitSet{}
	var order []string
	ch := workflow.NewBufferedChannel(ctx, 1)
	w.AddReceive(ch, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		order = append(order, "channel")
	})
	settables := map[string]workflow.Settable{}
	for _, name := range futures {
		f, s := workflow.NewFuture(ctx)
		settables[name] = s
		w.AddFuture(f, func(workflow.Future) { order = append(order, name) })
	}
	workflow.Go(ctx, func(ctx workflow.Context) {
		_ = workflow.Sleep(ctx, time.Second)
		for _, name := range settle {
			if s, ok := settables[name]; ok {
				s.Set(nil, nil)
			} else {
				ch.SendAsync(true)
			}
		}
	})
	for len(order) < len(settle) {
		w.Select(ctx)
	}
	return waitResult{Order: order, Asked: w.inOrder != nil}, nil
}

func runWaitOrder(t *testing.T, old bool, futures, settle []string) waitResult {
	t.Helper()
	env := newEnv(t)
	env.RegisterWorkflow(waitOrder)
	if old {
		env.OnGetVersion(changeWaitInOrder.ID, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	}
	env.ExecuteWorkflow(waitOrder, futures, settle)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res waitResult
	require.NoError(t, env.GetWorkflowResult(&res))
	return res
}

// Several cases ready at once run in the order they were added, channels
// first, whatever order they became ready in.
func TestWaitTakesWhatIsReadyInOrder(t *testing.T) {
	res := runWaitOrder(t, false, []string{"a", "b", "c"}, []string{"c", "a", "channel", "b"})
	require.Equal(t, []string{"channel", "a", "b", "c"}, res.Order)
	require.True(t, res.Asked)
}

// Runs from before the change wait as the SDK's Selector did: the case
// that became ready first runs first, then the rest in the order added.
func TestWaitInOldRunsTakesTheFirstReadyFirst(t *testing.T) {
	res := runWaitOrder(t, true, []string{"a", "b", "c"}, []string{"c", "a", "channel", "b"})
	require.Equal(t, []string{"c", "channel", "a", "b"}, res.Order)
	require.True(t, res.Asked)
}

// With one future pending the waitSet waits as the Selector did and asks
// no version, so a chain's history holds no marker.
func TestWaitOnOneFutureAsksNoVersion(t *testing.T) {
	res := runWaitOrder(t, false, []string{"a"}, []string{"a", "channel"})
	require.Equal(t, []string{"a", "channel"}, res.Order)
	require.False(t, res.Asked)
}
