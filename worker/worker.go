// Package worker wires playbook's workflow and activities into a Temporal
// worker; it links no Temporal server (the embedded one is
// internal/devserver's).
package worker

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"playbook/activities"
	"playbook/internal/store"
	"playbook/interpreter/contract"
	"playbook/interpreter/playbookwf"
)

// Options configure a playbook worker.
type Options struct {
	// Optional: the task queue; default contract.TaskQueue.
	TaskQueue string
	// Optional: where attempts' stdout and stderr go; default DefaultLogDir().
	LogDir string
	// Optional: how many steps run at once on this worker; default
	// DefaultMaxConcurrentSteps().
	MaxConcurrentSteps int
	// Optional: how long running steps may go on once Stop is called before
	// they are cancelled and reported lost, to be retried on another worker
	// at once; default DefaultDrainTimeout.
	DrainTimeout time.Duration
	// Optional: the worker's environment variables step processes see
	// besides PATH, HOME, LANG, TZ and TMPDIR; default none. TEMPORAL_*
	// variables never reach a step.
	StepEnv []string
	// Optional: the directory steps read {secret: NAME} from, one file per
	// secret; default activities.DefaultSecretsDir.
	SecretsDir string
	// Optional: the URL where this worker serves its attempts' logs
	// (Endpoint.URL), recorded with every attempt; default none.
	LogsAt string
	// Optional: the most bytes each attempt's stdout or stderr file keeps
	// of its stream: over it, the file keeps the stream's last part, after
	// a line saying how much was dropped; default
	// activities.DefaultMaxLogBytes.
	MaxLogBytes int64
	// Optional: the Worker Deployment this worker belongs to (Temporal's
	// Worker Versioning), with Build naming its version; both or neither.
	// A versioned worker takes only the runs of its version: a run stays
	// on the version that started it (pinned) unless AutoUpgrade, and new
	// runs start on the deployment's current version.
	Deployment Deployment
	// Optional: the run's store, where steps hand files on to each other
	// (outputs, inputs); default none: a step with files fails. With an s3
	// store, its credential variables (store.CredentialVars) never reach a
	// step, even when StepEnv names them.
	Store store.Store
	// Optional: where the worker exports runs' traces (TracingFromEnv);
	// default none: nothing is traced and no exporter runs.
	Tracing *Tracing
	// Optional: the client keeps payloads over 256 KiB in Store
	// (internal/claims: claims.Use on its options), so the steps of a run
	// that keeps large values may return results of up to
	// contract.LargeValueBudget; default false: 1 MiB.
	LargeValues bool
}

// Deployment is a worker's Worker Deployment version.
type Deployment struct {
	Name, BuildID string
	// AutoUpgrade moves a run to the deployment's current version at its
	// next workflow task, where the default pins it to the version it
	// started on.
	AutoUpgrade bool
}

// options are the SDK's deployment options for d; none when d is empty.
func (d Deployment) options() sdkworker.DeploymentOptions {
	if d.Name == "" {
		return sdkworker.DeploymentOptions{}
	}
	behavior := workflow.VersioningBehaviorPinned
	if d.AutoUpgrade {
		behavior = workflow.VersioningBehaviorAutoUpgrade
	}
	return sdkworker.DeploymentOptions{
		UseVersioning:             true,
		Version:                   sdkworker.WorkerDeploymentVersion{DeploymentName: d.Name, BuildID: d.BuildID},
		DefaultVersioningBehavior: behavior,
	}
}

// stepsPerCPU is how many steps a worker runs at once for each CPU it may
// use, unless told: most steps wait (on a process's sleep, a database, the
// network), and a loop with max_in_flight 200 runs at full width on two.
const stepsPerCPU = 100

// DefaultMaxConcurrentSteps is how many steps a worker runs at once unless
// told: stepsPerCPU for each CPU this process may use (GOMAXPROCS, which
// follows a container's CPU limit), so 200 on two. The SDK's own default
// (1,000 on any machine) lets a small worker start more processes than it
// can run.
func DefaultMaxConcurrentSteps() int { return stepsPerCPU * runtime.GOMAXPROCS(0) }

// workflowTaskTime is how long a workflow task may run without yielding
// (the SDK's deadlock detection, one second unless told). The interpreter
// never blocks (workflowcheck holds it to that), but its work between two
// yields grows with the playbook: parsing a 5,000-step playbook takes
// 0.16 s on an idle machine, and a run that keeps large values decodes and
// encodes values of up to 64 MiB. On a busy machine the SDK's second
// failed such tasks on every attempt (an events query replaying a
// 5,000-step chain, in CI), so every worker, the CLI's and one a program
// makes, allows the same minute.
const workflowTaskTime = time.Minute

// DefaultDrainTimeout is how long a stopping worker lets running steps finish.
const DefaultDrainTimeout = 30 * time.Second

// stopReportMargin is how long Stop waits, past the drain timeout, for the
// cancelled steps to kill their processes and report.
const stopReportMargin = 15 * time.Second

// DefaultStore is the store `worker` and `dev` use, and `files` reads,
// when --store is not given: $PLAYBOOK_STORE, else a directory beside the
// logs, ~/.local/state/playbook/store.
func DefaultStore() string {
	if s := os.Getenv("PLAYBOOK_STORE"); s != "" {
		return s
	}
	dir := filepath.Join(os.TempDir(), "playbook-store")
	if home, err := os.UserHomeDir(); err == nil {
		dir = filepath.Join(home, ".local", "state", "playbook", "store")
	}
	return "file://" + dir
}

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
		o.TaskQueue = contract.TaskQueue
	}
	if o.LogDir == "" {
		o.LogDir = DefaultLogDir()
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = DefaultDrainTimeout
	}
	if o.MaxConcurrentSteps == 0 {
		o.MaxConcurrentSteps = DefaultMaxConcurrentSteps()
	}
	w := sdkworker.New(c, o.TaskQueue, sdkworker.Options{
		DeadlockDetectionTimeout:                    workflowTaskTime,
		MaxConcurrentActivityExecutionSize:          o.MaxConcurrentSteps,
		MaxEagerActivityReservationsPerWorkflowTask: new(int(EagerStepsPerTask)),
		// A step heartbeats through the client, at most a third of its
		// heartbeat timeout apart, and passes the server's cancel on to
		// the SDK (activities.heartbeat); the SDK's own heartbeats (an
		// attempt's last record, that cancel) go out within a second of
		// being asked.
		MaxHeartbeatThrottleInterval:     time.Second,
		DefaultHeartbeatThrottleInterval: time.Second,
		// Stop stops polling, then waits for the running steps: they finish
		// within the drain timeout, or cancel themselves and report.
		WorkerStopTimeout: o.DrainTimeout + stopReportMargin,
		DeploymentOptions: o.Deployment.options(),
		Interceptors:      o.interceptors(),
	})
	RegisterWorkflow(w)
	acts := &activities.Activities{LogDir: o.LogDir, DrainTimeout: o.DrainTimeout, StepEnv: o.stepEnv(), SecretsDir: o.SecretsDir, Client: c, LogsAt: o.LogsAt, MaxLogBytes: o.MaxLogBytes, Store: o.Store, LargeValues: o.LargeValues}
	if o.Tracing != nil {
		acts.Trace = o.Tracing
	}
	w.RegisterActivityWithOptions(acts.RunStep, activity.RegisterOptions{Name: contract.RunStepName})
	w.RegisterActivityWithOptions(acts.Notify, activity.RegisterOptions{Name: contract.NotifyName})
	w.RegisterActivityWithOptions(triggerWatch{client: c}.Watch, activity.RegisterOptions{Name: contract.TriggerWatchActivity})
	w.RegisterActivityWithOptions(acts.AcquireSlot, activity.RegisterOptions{Name: contract.AcquireSlotName})
	w.RegisterActivityWithOptions(acts.WatchHolder, activity.RegisterOptions{Name: contract.WatchHolderName})
	return w
}

// EagerStepsPerTask is how many of the steps a workflow task starts this
// worker asks to run itself (Temporal's eager activity execution): the
// server answers the task with them, started, when the worker has free
// slots, with no task queue, no poll and no separate start in between;
// the others are dispatched as usual, to any worker. The SDK's default is
// 3, and a loop's driver starts about five elements a task: those past 3
// took the long way. 20,000 elements of `sh -c true`, 200 in flight,
// on the embedded server: 42-45 s at 3, 30 s at 20 (docs/INTERNALS.md).
// Far more is worse: the 200 elements a driver's run starts with all
// started and ended together, and the loop went on in lockstep batches
// (45 s at 50, 40-46 s at 200).
const EagerStepsPerTask = 20

// interceptors give the workflows their span sink when tracing is on.
func (o Options) interceptors() []interceptor.WorkerInterceptor {
	if o.Tracing == nil {
		return nil
	}
	return []interceptor.WorkerInterceptor{&spanInterceptor{sink: o.Tracing}}
}

// stepEnv is StepEnv without the store's credential variables, when the
// store reads its credentials from the worker's environment.
func (o Options) stepEnv() []string {
	if o.Store == nil || !store.HidesCredentials(o.Store) {
		return o.StepEnv
	}
	return slices.DeleteFunc(slices.Clone(o.StepEnv), func(name string) bool { return slices.Contains(store.CredentialVars, name) })
}

// RegisterWorkflow registers the Playbook workflow, its loop drivers,
// (for runs from before the drivers) its loop batches, the triggers'
// registrations and the coordinators of concurrency keys, on
// a worker or on a replayer (which replays workflows and needs no activities).
func RegisterWorkflow(r interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
}) {
	r.RegisterWorkflowWithOptions(playbookwf.Playbook, workflow.RegisterOptions{Name: contract.WorkflowName})
	r.RegisterWorkflowWithOptions(playbookwf.PlaybookLoopBatch, workflow.RegisterOptions{Name: contract.LoopBatchWorkflowName})
	r.RegisterWorkflowWithOptions(playbookwf.PlaybookLoop, workflow.RegisterOptions{Name: contract.LoopWorkflowName})
	r.RegisterWorkflowWithOptions(playbookwf.PlaybookTrigger, workflow.RegisterOptions{Name: contract.TriggerWorkflowName})
	r.RegisterWorkflowWithOptions(playbookwf.PlaybookConcurrency, workflow.RegisterOptions{Name: contract.CoordinatorWorkflowName})
}
