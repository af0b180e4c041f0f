package activities

import (
	"context"
	"time"

	"playbook/interpreter/contract"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
)

// The engine's metrics, emitted where attempts run (through the worker's
// metrics handler, so they go wherever the SDK's own go). Counters get
// `_total` and the timer `_seconds` from a Prometheus naming scope.
const (
	metricStepsStarted   = "playbook_steps_started"
	metricStepsCompleted = "playbook_steps_completed"
	metricStepsFailed    = "playbook_steps_failed"
	metricAttempts       = "playbook_step_attempts"
	metricAttemptsFailed = "playbook_step_attempts_failed"
	metricAttemptsLost   = "playbook_step_attempts_lost"
	metricStepDuration   = "playbook_step_attempt_duration"
)

// Step transitions, as logged (event "step_<transition>") and counted.
const (
	transitionStarted   = "started"
	transitionCompleted = "completed"
	transitionFailed    = "failed"
	transitionRetried   = "retried"
	transitionLost      = "lost"
	transitionCancelled = "cancelled"
)

// attemptWatch counts one attempt in the worker's metrics and logs its
// transitions, one line each, with the run, the step and the attempt.
type attemptWatch struct {
	metrics client.MetricsHandler
	logger  log.Logger
	fields  []any
	begun   time.Time
}

func watchAttempt(ctx context.Context, in contract.StepInput, number int) *attemptWatch {
	info := activity.GetInfo(ctx)
	return &attemptWatch{
		metrics: activity.GetMetricsHandler(ctx).WithTags(map[string]string{"tool_kind": in.Kind}),
		logger:  activity.GetLogger(ctx),
		fields: []any{"workflow_id", in.WorkflowID, "run_id", info.WorkflowExecution.RunID,
			"step", in.Step, "attempt", number, "tool_kind", in.Kind},
		begun: time.Now(),
	}
}

// started counts the attempt (and the step, on its activity's first
// attempt) and the attempts found lost since the last one on record.
func (w *attemptWatch) started(ctx context.Context, in contract.StepInput, number int) {
	if activity.GetInfo(ctx).Attempt == 1 {
		w.metrics.Counter(metricStepsStarted).Inc(1)
	}
	w.metrics.Counter(metricAttempts).Inc(1)
	if n := foundLost(ctx, in.PriorAttempts+1, number-1); n > 0 && in.Local == nil {
		// Their workers could not say so: the attempt after them counts them.
		w.metrics.Counter(metricAttemptsLost).Inc(int64(n))
	}
	w.log(transitionStarted, nil)
}

// ended counts and logs how the attempt ended; err is its error, if any.
func (w *attemptWatch) ended(transition string, err *contract.StepError) {
	w.metrics.WithTags(map[string]string{"outcome": transition}).Timer(metricStepDuration).Record(time.Since(w.begun))
	switch transition {
	case transitionCompleted:
		w.metrics.Counter(metricStepsCompleted).Inc(1)
	case transitionFailed:
		w.metrics.Counter(metricAttemptsFailed).Inc(1)
		w.metrics.Counter(metricStepsFailed).Inc(1)
	case transitionRetried:
		w.metrics.Counter(metricAttemptsFailed).Inc(1)
	case transitionLost:
		w.metrics.Counter(metricAttemptsLost).Inc(1)
	}
	w.log(transition, err)
}

// log writes a transition's line: an attempt that starts or completes at
// debug level (a loop of 100,000 elements would log 200,000 lines at info),
// one that fails, is retried, lost or cancelled at info.
func (w *attemptWatch) log(transition string, err *contract.StepError) {
	fields := append([]any{"event", "step_" + transition}, w.fields...)
	if err != nil {
		fields = append(fields, "error_type", err.Type, "error", err.Message)
	}
	if transition == transitionStarted || transition == transitionCompleted {
		w.logger.Debug("step "+transition, fields...)
		return
	}
	w.logger.Info("step "+transition, fields...)
}

// foundLost counts the attempts from first to last with no record of their
// end: they were lost with their worker.
func foundLost(ctx context.Context, first, last int) int {
	var log contract.AttemptLog
	if activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &log)
	}
	return len(contract.WithLostAttempts(log.Failed, first, last)) - len(log.Failed)
}
