package activities

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"

	"playbook/interpreter/contract"
)

// beatCounter is a client that counts the heartbeats sent through it.
type beatCounter struct {
	client.Client
	mu    sync.Mutex
	beats []time.Time
	// waiting is closed once want heartbeats were sent.
	want    int
	waiting chan struct{}
}

func (c *beatCounter) RecordActivityHeartbeat(context.Context, []byte, ...any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.beats = append(c.beats, time.Now())
	if c.waiting != nil && len(c.beats) >= c.want {
		close(c.waiting)
		c.waiting = nil
	}
	return nil
}

// await waits until the client has sent n heartbeats, at most a minute.
func (c *beatCounter) await(t *testing.T, n int) {
	t.Helper()
	c.mu.Lock()
	if len(c.beats) >= n {
		c.mu.Unlock()
		return
	}
	c.want, c.waiting = n, make(chan struct{})
	done := c.waiting
	c.mu.Unlock()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%d heartbeats in a minute, waiting for %d", len(c.gaps())+1, n)
	}
}

// gaps are the gaps between a client's heartbeats.
func (c *beatCounter) gaps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var gaps []time.Duration
	for i := 1; i < len(c.beats); i++ {
		gaps = append(gaps, c.beats[i].Sub(c.beats[i-1]))
	}
	return gaps
}

// An attempt heartbeats after 200ms, then every third of its heartbeat
// timeout, within bounds: with the 30s default, every second, so that a
// cancel reaches it within a second (#38: it took up to 10s); with 1.5s,
// every 500ms.
func TestHeartbeatEveryThirdOfItsTimeout(t *testing.T) {
	for timeout, every := range map[time.Duration]time.Duration{
		30 * time.Second:        time.Second,
		3 * time.Second:         time.Second,
		1500 * time.Millisecond: 500 * time.Millisecond,
		300 * time.Millisecond:  100 * time.Millisecond,
		150 * time.Millisecond:  100 * time.Millisecond, // not more often than every 100ms
		2 * time.Minute:         time.Second,            // nor less often than every second
		0:                       time.Second,
	} {
		require.Equal(t, every, beatEvery(timeout), "heartbeat timeout %s", timeout)
	}
	ms := time.Millisecond
	for timeout, want := range map[time.Duration][]time.Duration{
		30 * time.Second:        {200 * ms, time.Second, time.Second, time.Second, time.Second},
		3 * time.Second:         {200 * ms, time.Second, time.Second},
		1500 * time.Millisecond: {200 * ms, 500 * ms, 500 * ms},
		300 * time.Millisecond:  {100 * ms, 100 * ms},
	} {
		b := beatsFor(timeout)
		var got []time.Duration
		for range want {
			got = append(got, b.next())
		}
		require.Equal(t, want, got, "heartbeat timeout %s", timeout)
	}

	// What running attempts send until the one with the default timeout
	// sent four, at 0.2s, 1.2s, 2.2s and 3.2s; with 1.5s, every 500ms.
	slow, fast := &beatCounter{}, &beatCounter{}
	stopSlow := heartbeat(context.Background(), slow, activity.Info{HeartbeatTimeout: 30 * time.Second}, contract.AttemptLog{}, func(error) {})
	stopFast := heartbeat(context.Background(), fast, activity.Info{HeartbeatTimeout: 1500 * time.Millisecond}, contract.AttemptLog{}, func(error) {})
	slow.await(t, 4)
	stopSlow()
	stopFast()
	gaps := slow.gaps()
	require.Len(t, gaps, 3, "four heartbeats, three gaps, with the 30s default: %v", gaps)
	for _, gap := range gaps {
		require.InDelta(t, time.Second, gap, float64(400*time.Millisecond), "every second with the 30s default: %v", gaps)
	}
	for _, gap := range fast.gaps() {
		require.InDelta(t, 500*time.Millisecond, gap, float64(400*time.Millisecond), "every 500ms with 1.5s: %v", fast.gaps())
	}
	require.GreaterOrEqual(t, len(fast.gaps()), 5)
}

// An attempt that ends before its first heartbeat sends none and leaves
// nothing running: stop returns at once, and no heartbeat follows it.
func TestAShortAttemptSendsNoHeartbeat(t *testing.T) {
	c := &beatCounter{}
	stop := heartbeat(context.Background(), c, activity.Info{HeartbeatTimeout: 30 * time.Second}, contract.AttemptLog{}, func(error) {})
	stop()
	time.Sleep(2 * firstBeat)
	c.mu.Lock()
	defer c.mu.Unlock()
	require.Empty(t, c.beats, "an attempt stopped before its first heartbeat sent one")
}

// A worker asked to stop cuts its running attempts' tools off once the
// drain timeout has passed, not before, with errWorkerStopped: attempts
// that started before the stop and after it alike (all attempts of a
// worker watch one stop channel). An attempt that ended before is never
// cut off, nor one that ends within the timeout.
func TestDrainCutsRunningAttemptsOffAfterItsTimeout(t *testing.T) {
	a := &Activities{DrainTimeout: 300 * time.Millisecond}
	stop := make(chan struct{})
	never := func(error) { t.Error("an attempt that had ended was cut off") }
	a.drain(stop, never)()
	cut := make(chan error, 2)
	endBefore := a.drain(stop, func(err error) { cut <- err })
	quick := (&Activities{DrainTimeout: time.Hour}).drain(stop, never)
	stopped := time.Now()
	close(stop)
	endAfter := a.drain(stop, func(err error) { cut <- err })
	for range 2 {
		select {
		case err := <-cut:
			require.ErrorIs(t, err, errWorkerStopped)
			require.GreaterOrEqual(t, time.Since(stopped), a.DrainTimeout, "cut off before the drain timeout")
		case <-time.After(time.Minute):
			t.Fatal("a running attempt was not cut off a minute after its worker was asked to stop")
		}
	}
	endBefore()
	endAfter()
	quick()
}
