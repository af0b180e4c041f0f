// Package worker wires playbook's workflow and activities into a Temporal
// worker, and embeds a Temporal dev server for machines that have none.
package worker

import (
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"playbook/activities"
	"playbook/interpreter"
	"playbook/interpreter/playbookwf"
)

// Options configure a playbook worker.
type Options struct {
	// Optional: the task queue; default playbookwf.TaskQueue.
	TaskQueue string
	// Optional: where attempts' stdout and stderr go; default DefaultLogDir().
	LogDir string
	// Optional: how many steps run at once on this worker; default the SDK's.
	MaxConcurrentSteps int
	// Optional: how long running steps may go on once Stop is called before
	// they are cancelled and reported lost, to be retried on another worker
	// at once; default DefaultDrainTimeout.
	DrainTimeout time.Duration
	// Optional: the worker's environment variables step processes see
	// besides PATH, HOME, LANG, TZ and TMPDIR; default none. TEMPORAL_*
	// variables never reach a step.
	StepEnv []string
	// Optional: the URL where this worker serves its attempts' logs
	// (Endpoint.URL), recorded with every attempt; default none.
	LogsAt string
}

// DefaultDrainTimeout is how long a stopping worker lets running steps finish.
const DefaultDrainTimeout = 30 * time.Second

// stopReportMargin is how long Stop waits, past the drain timeout, for the
// cancelled steps to kill their processes and report.
const stopReportMargin = 15 * time.Second

// DefaultLogDir is $PLAYBOOK_LOG_DIR, else ~/.local/state/playbook/logs.
func DefaultLogDir() string {
	if d := os.Getenv("PLAYBOOK_LOG_DIR"); d != "" {
		return d
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "playbook", "logs")
	}
	return filepath.Join(os.TempDir(), "playbook-logs")
}

// New returns a worker (not yet started) that runs the Playbook workflow
// and its steps.
func New(c client.Client, o Options) sdkworker.Worker {
	if o.TaskQueue == "" {
		o.TaskQueue = playbookwf.TaskQueue
	}
	if o.LogDir == "" {
		o.LogDir = DefaultLogDir()
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = DefaultDrainTimeout
	}
	w := sdkworker.New(c, o.TaskQueue, sdkworker.Options{
		MaxConcurrentActivityExecutionSize: o.MaxConcurrentSteps,
		// A step heartbeats through the client every second and passes the
		// server's cancel on to the SDK (activities.heartbeat); the SDK's
		// own heartbeats (an attempt's last record, that cancel) go out
		// within a second of being asked.
		MaxHeartbeatThrottleInterval:     time.Second,
		DefaultHeartbeatThrottleInterval: time.Second,
		// Stop stops polling, then waits for the running steps: they finish
		// within the drain timeout, or cancel themselves and report.
		WorkerStopTimeout: o.DrainTimeout + stopReportMargin,
	})
	RegisterWorkflow(w)
	acts := &activities.Activities{LogDir: o.LogDir, DrainTimeout: o.DrainTimeout, StepEnv: o.StepEnv, Client: c, LogsAt: o.LogsAt}
	w.RegisterActivityWithOptions(acts.RunStep, activity.RegisterOptions{Name: interpreter.RunStepName})
	w.RegisterActivityWithOptions(acts.Notify, activity.RegisterOptions{Name: interpreter.NotifyName})
	return w
}

// RegisterWorkflow registers the Playbook workflow and its loop batches, on
// a worker or on a replayer (which replays workflows and needs no activities).
func RegisterWorkflow(r interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
}) {
	r.RegisterWorkflowWithOptions(playbookwf.Playbook, workflow.RegisterOptions{Name: playbookwf.WorkflowName})
	r.RegisterWorkflowWithOptions(playbookwf.PlaybookLoopBatch, workflow.RegisterOptions{Name: playbookwf.LoopBatchWorkflowName})
}
