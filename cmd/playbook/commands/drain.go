package commands

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	sdkworker "go.temporal.io/sdk/worker"
)

// stopOnSignal waits for SIGTERM or SIGINT (or the command's end), then
// stops the worker gracefully: it polls no more, and its running steps
// finish within the drain timeout or are cancelled and reported lost, to be
// retried elsewhere at once. A second signal returns at once (forced): the
// steps' processes die with this process, and their attempts are retried
// once their heartbeats time out.
// It says so on notes (say: as a line of the worker's log format).
func stopOnSignal(c *call, w sdkworker.Worker, drain time.Duration, say func(msg string)) (forced bool) {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	select {
	case <-sig:
	case <-c.ctx.Done():
	}
	say(fmt.Sprintf("Stopping: no new steps; running steps have %s to finish (signal again to stop at once).", drain))
	stopped := make(chan struct{})
	go func() { w.Stop(); close(stopped) }()
	select {
	case <-stopped:
		return false
	case <-sig:
		return true
	}
}
