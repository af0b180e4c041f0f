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
