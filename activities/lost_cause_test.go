package activities

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"

	"playbook/interpreter/contract"
)

// An attempt whose context the SDK ended is lost only when its worker shut
// down or could not heartbeat; a cancel request, a pause or reset, an
// attempt the server no longer has, or its own deadline are not losses.
func TestLostCause(t *testing.T) {
	ended := func(cause error) context.Context {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		return ctx
	}
	expired, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-expired.Done()
	for _, c := range []struct {
		name string
		ctx  context.Context
		typ  string
		lost bool
	}{
		{"a heartbeat that timed out", ended(context.DeadlineExceeded), "heartbeat_timeout", true},
		{"the server out of reach", ended(serviceerror.NewUnavailable("connection refused")), "heartbeat_timeout", true},
		{"the worker shutting down", ended(sdkworker.ErrWorkerShutdown), "worker_stopped", true},
		{"a cancel request", ended(temporal.NewCanceledError()), "", false},
		{"a pause", ended(activity.ErrActivityPaused), "", false},
		{"a reset", ended(activity.ErrActivityReset), "", false},
		{"an attempt the server no longer has", ended(serviceerror.NewNotFound("gone")), "", false},
		{"the attempt's own deadline", expired, "", false},
		{"a wrapped pause", ended(errors.Join(errors.New("x"), activity.ErrActivityPaused)), "", false},
	} {
		typ, lost := lostCause(c.ctx)
		require.Equal(t, c.lost, lost, c.name)
		require.Equal(t, c.typ, typ, c.name)
	}
}

// An attempt lost with its worker has, in the next attempt's record of
// it, where that worker served its logs, as its last heartbeat said: the
// record is where `playbook logs` looks.
func TestALostAttemptKeepsWhereItsLogsAre(t *testing.T) {
	env := quietSuite().NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(func(ctx context.Context) (contract.AttemptLog, error) {
		return previousAttempts(ctx, 0, 3), nil
	}, activity.RegisterOptions{Name: "previous"})
	env.SetHeartbeatDetails(contract.AttemptLog{Current: 2, LogsAt: "http://w2:9090",
		Failed: []contract.AttemptRecord{{Attempt: 1, Error: contract.StepError{Type: "exit_code"}, LogsAt: "http://w1:9090"}}})
	v, err := env.ExecuteActivity("previous")
	require.NoError(t, err)
	var log contract.AttemptLog
	require.NoError(t, v.Get(&log))
	require.Len(t, log.Failed, 2)
	require.Equal(t, "http://w1:9090", log.Failed[0].LogsAt)
	require.True(t, log.Failed[1].Lost)
	require.Equal(t, "http://w2:9090", log.Failed[1].LogsAt, "the lost attempt's logs are where its worker served them")
}
