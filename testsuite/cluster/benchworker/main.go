// Command benchworker is the hand-written twin `make bench-cluster` runs
// beside `playbook worker`: a Temporal worker whose workflow runs a chain
// of activities, each running `sh -c true`, with the activity options a
// playbook gives a step without retry or timeout.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"playbook/internal/quietlog"
	"playbook/interpreter/playbookwf"
)

// BenchTrue runs what a playbook's `{kind: shell, command: "true"}` runs.
func BenchTrue(ctx context.Context) error {
	return exec.CommandContext(ctx, "/bin/sh", "-c", "true").Run()
}

// BenchChain runs n BenchTrue activities one after another.
func BenchChain(ctx workflow.Context, n int) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    playbookwf.DefaultHeartbeatTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	for range n {
		if err := workflow.ExecuteActivity(ctx, BenchTrue).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	address := flag.String("address", "127.0.0.1:7233", "the Temporal frontend")
	queue := flag.String("task-queue", "bench-native", "the task queue to poll")
	flag.Parse()
	c, err := client.Dial(client.Options{HostPort: *address, Logger: quietlog.New()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer c.Close()
	w := worker.New(c, *queue, worker.Options{})
	w.RegisterWorkflow(BenchChain)
	w.RegisterActivity(BenchTrue)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := w.Run(contextDone(ctx)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// contextDone is ctx's end as the channel worker.Run stops on.
func contextDone(ctx context.Context) <-chan any {
	done := make(chan any)
	go func() { <-ctx.Done(); close(done) }()
	return done
}
