package playbookwf

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// noTimeout stands for a step without `timeout`: the attempt may run as
// long as its worker keeps heartbeating.
const noTimeout = 10 * 365 * 24 * time.Hour

// DefaultHeartbeatTimeout is how long a silent worker keeps an attempt when
// the step sets no heartbeat_timeout: a worker stalled for a few seconds
// (a GC pause, a slow disk) keeps its attempts. A running step heartbeats
// every second at least (activities.heartbeat), so that a cancel reaches
// it within a second. A lost attempt is retried about 30 s
// after its worker died; a step that must be retried sooner sets a shorter
// heartbeat_timeout.
const DefaultHeartbeatTimeout = 30 * time.Second

// oldHeartbeatTimeout is the default of activities that carry no lost
// attempts budget (StepInput.Lost): loop batches of runs started before.
const oldHeartbeatTimeout = 30 * time.Second

// timeoutGrace lets an attempt that hit its own timeout kill its process and
// report before the server's start-to-close timeout would fire.
const timeoutGrace = 30 * time.Second

// activityOptions derive a step's Temporal activity options: its name as
// activity ID and UI summary, its timeouts, and its retry block as the
// RetryPolicy (the activity picks each delay itself through NextRetryDelay;
// the policy governs timeouts the server enforces). The policy has room for
// the step's lost attempts on top of its own (in.Lost).
func activityOptions(s *spec.Step, in contract.StepInput) workflow.ActivityOptions {
	toolSpec := s.RetryBlock()
	attempts := toolSpec.MaxAttempts
	if s.FailureHandler != nil {
		for _, r := range s.FailureHandler.Rules {
			attempts = max(attempts, r.MaxRetries+1)
		}
	}
	defaultHeartbeat := oldHeartbeatTimeout
	if in.Lost != nil {
		attempts += in.Lost.Attempts
		defaultHeartbeat = DefaultHeartbeatTimeout
	}
	policy := &temporal.RetryPolicy{
		MaximumAttempts:    int32(attempts),
		InitialInterval:    max(toolSpec.InitialDelay, time.Millisecond),
		BackoffCoefficient: max(toolSpec.Multiplier, 1),
		MaximumInterval:    max(toolSpec.MaxDelay, toolSpec.InitialDelay, time.Millisecond),
	}
	startToClose := noTimeout
	if s.Timeout > 0 {
		startToClose = s.Timeout + timeoutGrace
	}
	heartbeat := s.HeartbeatTimeout
	if heartbeat == 0 {
		heartbeat = defaultHeartbeat
	}
	summary := s.Name
	if s.Desc != "" {
		summary += ": " + s.Desc
	}
	return workflow.ActivityOptions{
		ActivityID:          s.Name,
		Summary:             summary,
		StartToCloseTimeout: startToClose,
		HeartbeatTimeout:    heartbeat,
		RetryPolicy:         policy,
		// "" (no queue: key): the run's own task queue.
		TaskQueue: s.Queue,
		// A cancelled step reports only after its process group is gone.
		WaitForCancellation: true,
	}
}
