package commands

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	sdkworker "go.temporal.io/sdk/worker"

	"playbook/worker"
)

// drainFlag is how long a worker asked to stop lets its running steps finish.
func drainFlag() cli.Flag {
	return &cli.DurationFlag{Name: "drain-timeout", Value: worker.DefaultDrainTimeout,
		Usage: "on SIGTERM or SIGINT, how long running steps may finish before they are cancelled and retried on another worker"}
}

// drainTimeout reads --drain-timeout; 0 cancels running steps at once.
func drainTimeout(c *cli.Context) time.Duration {
	return max(c.Duration("drain-timeout"), time.Nanosecond)
}

// stopOnSignal waits for SIGTERM or SIGINT (or the command's end), then
// stops the worker gracefully: it polls no more, and its running steps
// finish within the drain timeout or are cancelled and reported lost, to be
// retried elsewhere at once. A second signal returns at once (forced): the
// steps' processes die with this process, and their attempts are retried
// once their heartbeats time out.
func stopOnSignal(c *cli.Context, w sdkworker.Worker) (forced bool) {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	select {
	case <-sig:
	case <-c.Context.Done():
	}
	fmt.Fprintf(c.App.ErrWriter, "Stopping: no new steps; running steps have %s to finish (signal again to stop at once).\n", drainTimeout(c))
	stopped := make(chan struct{})
	go func() { w.Stop(); close(stopped) }()
	select {
	case <-stopped:
		return false
	case <-sig:
		return true
	}
}
