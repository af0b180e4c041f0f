package runs

import (
	"context"
	"fmt"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"

	"playbook/internal/codec"
	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// Live is a step's retry state as the server sees it between attempts.
type Live struct {
	Attempt         int32      `json:"attempt"`
	MaximumAttempts int32      `json:"maximum_attempts,omitempty"`
	State           string     `json:"state"`
	LastFailure     string     `json:"last_failure,omitempty"`
	NextAttemptTime *time.Time `json:"next_attempt_time,omitempty"`
}

// Status is where a run stands, what `playbook status --json` prints: the aggregate in the same
// shape as `run --json` (so `jq .failed_steps` works on both), with the
// live retry state of running steps beside it under "live".
type Status struct {
	*contract.Aggregate
	Live map[string]Live `json:"live,omitempty"`
	// WaitsUntil is when each running wait step's timer fires.
	WaitsUntil map[string]time.Time `json:"waits_until,omitempty"`
	// Queues is the task queue each step with a tool runs on, when one of
	// them is not the run's own (`queue`); absent otherwise.
	Queues map[string]string `json:"queues,omitempty"`
	// playbook is the run's frozen playbook, nil when it cannot be read.
	playbook *spec.Playbook
	// byTemporal says that Temporal ended the run without its end step.
	byTemporal bool
}

// Playbook is the run's frozen playbook, nil when it cannot be read: a
// step table follows its file order.
func (st *Status) Playbook() *spec.Playbook { return st.playbook }

// EndedByTemporal says that Temporal ended the run without its end step
// (terminated, timed out): the table, if any, is where its steps stood.
func (st *Status) EndedByTemporal() bool { return st.byTemporal }

// StatusOf reads where a run stands. An open run answers a query (its
// step table) and the server adds its running activities' retry state
// (attempt, last failure, next attempt time). A run that has ended is read
// from its history, with no worker needed: its result, or its failure's or
// cancellation's details, are the aggregate. A run Temporal ended by itself
// (terminate, an execution timeout) has none: its status is Temporal's, and
// its step table is asked of a worker if one polls.
func StatusOf(ctx context.Context, c Client, run string) (*Status, error) {
	d, err := c.DescribeWorkflowExecution(ctx, run, "")
	if err != nil {
		return nil, notFound(run, err)
	}
	info := d.GetWorkflowExecutionInfo()
	if t := info.GetType().GetName(); t != contract.WorkflowName {
		return nil, &InvalidError{Err: fmt.Errorf("%s is not a playbook run: its workflow type is %s (%s)", run, t, workflowKind(t))}
	}
	st := &Status{Live: map[string]Live{}, playbook: FrozenPlaybook(ctx, c, run)}
	st.Queues = queuesOf(st.playbook, info.GetTaskQueue())
	switch info.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		if st.Aggregate, err = QueryState(ctx, c, run); err != nil {
			return nil, encrypted(run, err)
		}
		st.WaitsUntil = waitsUntil(ctx, c, run, info.GetExecution().GetRunId(), st.Aggregate, st.playbook)
		queuedNow(ctx, c, run, st.Aggregate.Queued)
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		if st.Aggregate, err = Result(ctx, c.GetWorkflow(ctx, run, info.GetExecution().GetRunId())); err != nil {
			return nil, encrypted(run, err)
		}
	default:
		st.Aggregate, st.byTemporal = EndedByTemporal(ctx, c, run, info, st.playbook), true
	}
	st.Aggregate.WorkflowID = run
	st.Aggregate.RunID = info.GetExecution().GetRunId()
	for _, pa := range d.GetPendingActivities() {
		l := Live{Attempt: pa.GetAttempt(), MaximumAttempts: pa.GetMaximumAttempts(), State: strings.TrimPrefix(pa.GetState().String(), "PENDING_ACTIVITY_STATE_")}
		if f := pa.GetLastFailure(); f != nil {
			l.LastFailure = f.GetMessage()
		}
		if t := pa.GetNextAttemptScheduleTime(); t != nil {
			at := t.AsTime()
			l.NextAttemptTime = &at
		}
		if s := StepOfActivity(st.playbook, pa.GetActivityId()); s != nil {
			failed, known := FailedAttempt(pa.GetHeartbeatDetails(), int(pa.GetAttempt())-1)
			l.MaximumAttempts = int32(AttemptsAfter(s, failed, known))
		}
		st.Live[pa.GetActivityId()] = l
	}
	return st, nil
}

// workflowKind says what an execution of workflow type t is.
func workflowKind(t string) string {
	switch t {
	case contract.LoopWorkflowName:
		return "a loop's driver: `playbook status` of the run that started it shows the loop"
	case contract.LoopBatchWorkflowName:
		return "a batch of a loop's elements: `playbook status` of the run that started it shows the loop"
	case contract.CoordinatorWorkflowName:
		return "the coordinator of a concurrency key: `playbook status` of a run it holds or queues shows where that run stands"
	case contract.TriggerWorkflowName:
		return "a trigger's registration, which `playbook schedule apply` keeps: `playbook list` shows the runs it starts"
	}
	return "not a workflow of playbook's"
}

// encrypted is err, when it is this client's failure to decrypt the run's
// payloads, as what to do about it (the caller did not give the key: an
// InvalidError); else err.
func encrypted(run string, err error) error {
	if !codec.Unreadable(err) {
		return err
	}
	return &InvalidError{Err: fmt.Errorf("run %s's payloads are encrypted and this client cannot read them (%s): %s", run, codec.Why(err), codec.KeyHint)}
}

// waitsUntil reads, from the run's events, until when its running wait
// steps wait; nil when none runs.
func waitsUntil(ctx context.Context, c Client, run, runID string, agg *contract.Aggregate, pb *spec.Playbook) map[string]time.Time {
	if pb == nil {
		return nil
	}
	waiting := false
	for name, s := range agg.Steps {
		step := pb.Step(name)
		waiting = waiting || (s.Status == contract.StatusRunning && step != nil && step.Tool != nil && step.Tool.Kind == "wait")
	}
	if !waiting {
		return nil
	}
	var out map[string]time.Time
	evs, _ := Events(ctx, c, run, runID, 0, waitsQueryBound)
	for _, e := range evs {
		until, _ := e.Data["until"].(string)
		t, err := time.Parse(time.RFC3339Nano, until)
		if s := agg.Steps[e.Step]; e.Type != "step_waiting_until" || err != nil || s == nil || s.Status != contract.StatusRunning {
			continue
		}
		if out == nil {
			out = map[string]time.Time{}
		}
		out[e.Step] = t
	}
	return out
}

// queuedNow brings a queued run's holders and place up to date: the run
// knows them as they were when it asked, its key's coordinator knows them
// now. Unchanged when the coordinator does not answer.
func queuedNow(ctx context.Context, c Client, run string, q *contract.QueuedRun) {
	if q == nil {
		return
	}
	v, err := c.QueryWorkflow(ctx, q.Coordinator, "", contract.QuerySlots)
	var slots contract.Slots
	if err != nil || v.Get(&slots) != nil {
		return
	}
	for i, r := range slots.Queue {
		if r.WorkflowID == run {
			q.Holders = q.Holders[:0]
			for _, h := range slots.Holders {
				q.Holders = append(q.Holders, h.WorkflowID)
			}
			q.Position = i + 1
		}
	}
}

// QueryState asks a run's worker for its step table.
func QueryState(ctx context.Context, c Client, run string) (*contract.Aggregate, error) {
	v, err := c.QueryWorkflow(ctx, run, "", contract.QueryState)
	if err != nil {
		return nil, err
	}
	var agg contract.Aggregate
	if err := v.Get(&agg); err != nil {
		return nil, err
	}
	return &agg, nil
}

// EndedByTemporal is the aggregate of a run Temporal ended without its
// end step (terminated, timed out): its status is Temporal's, whatever the
// run last said; its steps are the table a worker replays, when one polls
// its task queue, else none.
func EndedByTemporal(ctx context.Context, c Client, run string, info *workflowpb.WorkflowExecutionInfo, pb *spec.Playbook) *contract.Aggregate {
	agg := &contract.Aggregate{}
	if Polled(ctx, c, info.GetTaskQueue()) {
		qctx, cancel := context.WithTimeout(ctx, queryWait)
		if a, err := QueryState(qctx, c, run); err == nil {
			agg = a
		}
		cancel()
	}
	if agg.Playbook == "" && pb != nil {
		agg.Playbook = pb.Name
	}
	agg.Status = TemporalStatus(info)
	return agg
}

// queryWait bounds the query of a run that has ended: a worker replays its
// whole history to answer.
const queryWait = 10 * time.Second

// Polled says whether a worker has polled the task queue lately.
func Polled(ctx context.Context, c Client, queue string) bool {
	resp, err := c.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	return err == nil && len(resp.GetPollers()) > 0
}

// FrozenPlaybook is the playbook a run was started with, as its history
// holds it; nil when it cannot be read.
func FrozenPlaybook(ctx context.Context, c Client, run string) *spec.Playbook {
	in, err := FrozenInput(ctx, c, run)
	if err != nil {
		return nil
	}
	pb, err := spec.Parse(in.File, []byte(in.Source))
	if err != nil {
		return nil
	}
	return pb
}

// ConfiguredAttempts is how many attempts a step's own failures may take:
// its retry block's max_attempts, or one more than its exit-code rules'
// largest max_retries. The attempts lost with their worker come on top
// (lost_attempts), counted apart.
func ConfiguredAttempts(s *spec.Step) int {
	n := s.RetryBlock().MaxAttempts
	if s.FailureHandler != nil {
		for _, r := range s.FailureHandler.Rules {
			n = max(n, r.MaxRetries+1)
		}
	}
	return n
}

// AttemptsAfter is how many attempts step s may take after the failed
// attempt its attempt log recorded (known: the log had it), as run and
// status count them: what judges that failure (AttemptsFor), else the
// most any failure may take (ConfiguredAttempts).
func AttemptsAfter(s *spec.Step, failed contract.AttemptRecord, known bool) int {
	if !known {
		return ConfiguredAttempts(s)
	}
	return AttemptsFor(s, ExitCodeOf(failed))
}

// StepOfActivity is the step of pb an activity ID names (a loop element's,
// STEP[i], too); nil when pb is nil or has no such step.
func StepOfActivity(pb *spec.Playbook, activityID string) *spec.Step {
	if pb == nil {
		return nil
	}
	return pb.Step(strings.SplitN(activityID, "[", 2)[0])
}

// AttemptsFor is how many attempts a step may take after a failure with
// exit code code: the exit-code rule that matches it judges it alone (its
// max_retries plus one), any other failure the retry block (max_attempts);
// ConfiguredAttempts, the most either gives, when the code is not known.
func AttemptsFor(s *spec.Step, code *int) int {
	if code == nil {
		return ConfiguredAttempts(s)
	}
	if s.FailureHandler != nil {
		if r := spec.MatchRule(s.FailureHandler.Rules, *code); r != nil {
			return r.MaxRetries + 1
		}
	}
	return s.RetryBlock().MaxAttempts
}

// waitsQueryBound bounds the events query status makes to read until when
// its wait steps wait: a slow answer leaves the times out.
const waitsQueryBound = 2 * time.Second

// FailedAttempt is the record of a failed attempt, from the attempt log
// a pending step heartbeats; false when the log does not have it.
func FailedAttempt(details *commonpb.Payloads, attempt int) (contract.AttemptRecord, bool) {
	if len(details.GetPayloads()) == 0 {
		return contract.AttemptRecord{}, false
	}
	dc, err := PayloadConverter()
	if err != nil {
		return contract.AttemptRecord{}, false
	}
	var log contract.AttemptLog
	if dc.FromPayload(details.GetPayloads()[0], &log) != nil {
		return contract.AttemptRecord{}, false
	}
	for _, r := range log.Failed {
		if r.Attempt == attempt {
			return r, true
		}
	}
	return contract.AttemptRecord{}, false
}

// ExitCodeOf is a failed attempt's exit code, nil when it had none (a
// timeout, an http step, a lost attempt).
func ExitCodeOf(r contract.AttemptRecord) *int {
	details, _ := r.Error.Details.(map[string]any)
	if r.Lost || details == nil {
		return nil
	}
	switch c := details["exit_code"].(type) {
	case float64:
		code := int(c)
		return &code
	case int:
		return &c
	}
	return nil
}
