// Package activities runs one attempt of a step's tool, decides where the
// attempt ran whether another one follows, and reports either a result or a
// structured error. One file per tool kind; retry.go holds the decision.
package activities

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"playbook/internal/store"
	"playbook/interpreter/contract"
	"playbook/interpreter/spec"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
)

// firstBeat is when a running attempt sends its first heartbeat.
const firstBeat = 200 * time.Millisecond

// A running attempt heartbeats at most every third of its heartbeat
// timeout, so that a heartbeat that fails, and is sent again, costs
// nothing; never more often than minBeatEvery (each heartbeat is a write
// on the server) nor less often than maxBeatEvery: a cancel (the run's
// deadline, `playbook cancel`, failure_mode: cancel) reaches a step only
// with a heartbeat's answer, so it reaches a step within maxBeatEvery.
// docs/INTERNALS.md states what a heartbeat a second costs the server
// (BenchmarkHeartbeat measures it).
const (
	minBeatEvery = 100 * time.Millisecond
	maxBeatEvery = time.Second
)

// beatEvery is how often an attempt with this heartbeat timeout heartbeats
// once it has run a while; without a timeout (0), every maxBeatEvery.
func beatEvery(timeout time.Duration) time.Duration {
	if timeout <= 0 {
		return maxBeatEvery
	}
	return min(max(timeout/3, minBeatEvery), maxBeatEvery)
}

// beats says when a running attempt heartbeats: firstBeat after it starts,
// then every beatEvery (a second at most), so that a cancel reaches it
// within a second however long it has run.
type beats struct{ gap, every time.Duration }

func beatsFor(timeout time.Duration) *beats {
	every := beatEvery(timeout)
	return &beats{gap: min(firstBeat, every), every: every}
}

// next is how long to wait for the next heartbeat.
func (b *beats) next() time.Duration {
	gap := b.gap
	b.gap = min(max(2*b.gap, time.Second), b.every)
	return gap
}

// isInit says whether this worker is PID 1, which inherits every orphaned
// process: it reaps those left in a step's group (groupGone), not those
// that left it; warnInit says so once.
var (
	isInit   = os.Getpid() == 1
	warnInit sync.Once
)

// Activities holds what every attempt shares. Register it with a worker.
type Activities struct {
	// LogDir holds every attempt's stdout and stderr, by run, step and attempt.
	LogDir string
	// HTTP is the client for http steps and webhooks; default http.DefaultClient.
	HTTP *http.Client
	// DrainTimeout is how long a running attempt may go on once its worker
	// is asked to stop; then its tool is cancelled and the attempt reported
	// lost, to be retried on another worker at once.
	DrainTimeout time.Duration
	// StepEnv names the worker's environment variables that step processes
	// see besides PATH, HOME, LANG, TZ and TMPDIR; TEMPORAL_* and OTEL_*
	// never reach a step, whatever is listed.
	StepEnv []string
	// SecretsDir holds the secrets steps name with {secret: NAME}, one file
	// each (DefaultSecretsDir when empty).
	SecretsDir string
	// Client is the worker's client, which a running step heartbeats
	// through (see heartbeat). Optional: without one (the SDK's test
	// environment) steps heartbeat through the SDK's activity heartbeat,
	// which gives an attempt up when one heartbeat fails for a second.
	Client client.Client
	// LogsAt is the URL where this worker serves its attempts' logs; it goes
	// into every attempt's record. Empty: not served.
	LogsAt string
	// MaxLogBytes caps each attempt's stdout and stderr files: a longer
	// stream keeps its last part, after a line saying how much was dropped
	// (outputLog). 0: DefaultMaxLogBytes; at least 1 KiB.
	MaxLogBytes int64
	// Store is the run's store, where steps hand files on to each other
	// (outputs, inputs). Optional: nil fails a step that has files.
	Store store.Store
	// LargeValues: the worker's client keeps payloads over 256 KiB in
	// Store (internal/claims), so a step of a run that does too may return
	// a result of up to contract.LargeValueBudget.
	LargeValues bool
	// Stand, when set, stands in for the tools and recovery scripts of the
	// attempts it takes (`playbook test`'s mocks): what it says an attempt
	// did goes through the same retry decision as a real attempt. Optional:
	// nil runs every tool.
	Stand Stand
	// Trace, when set, takes each attempt's span, and the attempt carries
	// its span's context into its process (TRACEPARENT) or its request
	// (traceparent). Optional: nil traces nothing.
	Trace AttemptSpans
}

// Stand says what an attempt did instead of running its tool.
type Stand interface {
	// Attempt is the outcome of attempt number of in's step, taken says
	// whether it stands in at all (false: the tool runs), and lost that
	// the attempt was lost with its worker.
	Attempt(ctx context.Context, in contract.StepInput, number int) (o ToolResult, lost, taken bool)
	// Recovery is the exit code of a rule's recovery script before the
	// retry after attempt number, and whether it stands in for it.
	Recovery(in contract.StepInput, number, exitCode int, script string) (code int, taken bool)
}

// RunStep runs one attempt. A failure returns an application error whose
// type is the step error's type; it is non-retryable when DecideRetry says
// stop, and carries the next delay when it says retry. When a rule retries,
// its recovery script runs before the error is returned.
//
// Attempts lost with their worker are retried by the activity's retry
// policy, which leaves room for them (see contract.LostSpec); an attempt counts them
// from the attempt log and decides only on the step's own attempts, so the
// retry block's budget, retry_when and stop_when never see a lost one.
func (a *Activities) RunStep(ctx context.Context, in contract.StepInput) (*contract.StepOutput, error) {
	return a.traced(ctx, in, func(ctx context.Context) (*contract.StepOutput, error) { return a.runStep(ctx, in) })
}

// runStep is one attempt of RunStep.
func (a *Activities) runStep(ctx context.Context, in contract.StepInput) (*contract.StepOutput, error) {
	if isInit {
		warnInit.Do(func() {
			activity.GetLogger(ctx).Warn("this worker runs as PID 1 without an init: a process that leaves its step's process group " +
				"(setsid, a daemon) stays a zombie when it ends, filling the process table; run the worker under an init (docker run --init, or tini as docker/Dockerfile does)")
		})
	}
	info := activity.GetInfo(ctx)
	// attempt counts within this activity, as its retry policy does; number
	// is the step's attempt number, across classifications; own leaves out
	// the attempts lost with their worker.
	attempt := int(info.Attempt)
	var log contract.AttemptLog
	if in.Local != nil {
		// A local step's attempts count across its local activities.
		attempt += in.Local.Before
		log = localAttempts(ctx, in)
	} else {
		log = previousAttempts(ctx, in.PriorAttempts, in.PriorAttempts+attempt)
	}
	number := in.PriorAttempts + attempt
	log.Current = number
	log.LogsAt = a.LogsAt
	watch := watchAttempt(ctx, in, number)
	watch.started(ctx, in, number)
	own := attempt
	if in.Lost != nil {
		lost := countLost(log.Failed, in.PriorAttempts+1)
		if lost > in.Lost.Attempts {
			watch.ended(transitionFailed, nil)
			return nil, lostTooOften(log, in, lost, attempt-1)
		}
		own = attempt - lost
	}
	defer holdLogDir(a.stepLogDir(in))()
	// Whatever stops the tool before its end (the server's answer to a
	// heartbeat, a heartbeat that cannot reach it, the drain timeout) says
	// why as stopCtx's cause.
	stopCtx, stopTool := context.WithCancelCause(ctx)
	stopHeartbeat := heartbeat(ctx, a.Client, info, log, stopTool)
	toolCtx, cancel := stopCtx, context.CancelFunc(func() {})
	if in.Timeout > 0 {
		toolCtx, cancel = context.WithTimeout(toolCtx, in.Timeout)
	}
	endDrain := func() {}
	if in.Lost != nil {
		endDrain = a.drain(activity.GetWorkerStopChannel(ctx), stopTool)
	}
	// Secrets are read as the attempt starts; only their names are in the
	// step's input, and their texts are hidden in all it writes.
	var o ToolResult
	stood, lostStanding := false, false
	if a.Stand != nil {
		o, lostStanding, stood = a.Stand.Attempt(ctx, in, number)
	}
	resolved, secrets, secretErr := in.Spec, (*redactor)(nil), (*contract.StepError)(nil)
	if !stood {
		resolved, secrets, secretErr = a.withSecrets(in.Spec, in.Secrets)
	}
	switch {
	case stood && lostStanding && in.Lost != nil:
		endDrain()
		stopHeartbeat()
		cancel()
		stopTool(nil)
		watch.ended(transitionLost, nil)
		return nil, a.lostWithWorker(ctx, log, in, attempt, contract.ErrHeartbeatTimeout,
			fmt.Sprintf("attempt %d was lost: its worker stopped heartbeating", log.Current), ToolResult{})
	case stood:
	case secretErr != nil:
		o = ToolResult{Err: secretErr}
	default:
		withValues := in
		withValues.Spec = resolved
		o = a.runWithFiles(toolCtx, withValues, func() ToolResult {
			return boundResult(secrets.result(a.runTool(withRedactor(toolCtx, secrets), withValues, number)), a.largeValues(in))
		})
	}
	endDrain()
	stopHeartbeat()
	why := context.Cause(stopCtx)
	cancel()
	stopTool(nil)
	answered := serverStops(why)
	if ctx.Err() != nil || answered {
		if typ, lost := lostCause(ctx); lost && in.Lost != nil && !answered {
			watch.ended(transitionLost, nil)
			return nil, a.lostWithWorker(ctx, log, in, attempt, typ,
				fmt.Sprintf("attempt %d was lost: %v", log.Current, context.Cause(ctx)), o)
		}
		// The attempt itself was cancelled: not ours to decide.
		watch.ended(transitionCancelled, nil)
		return nil, temporal.NewCanceledError(fmt.Sprintf("step %s cancelled", in.Step))
	}
	if o.Err != nil && errors.Is(why, errCutOff) {
		if in.Lost == nil {
			watch.ended(transitionCancelled, nil)
			return nil, temporal.NewCanceledError(fmt.Sprintf("step %s cancelled: %v", in.Step, why))
		}
		watch.ended(transitionLost, nil)
		return nil, a.lostWithWorker(ctx, log, in, attempt, contract.ErrHeartbeatTimeout,
			fmt.Sprintf("attempt %d was lost: %v", log.Current, why), o)
	}
	if o.Err != nil && errors.Is(why, errWorkerStopped) {
		watch.ended(transitionLost, nil)
		return nil, a.lostWithWorker(ctx, log, in, attempt, contract.ErrWorkerStopped,
			fmt.Sprintf("attempt %d was stopped with its worker: still running %s after the worker was asked to stop", log.Current, a.DrainTimeout), o)
	}
	if isLogSpaceFailure(o.Err) && in.Lost != nil {
		// The disk is full, not the step wrong: its exit code, if it ran,
		// says nothing of the step's own work.
		e := *o.Err
		e.Details = nil
		watch.ended(transitionLost, &e)
		return nil, a.lostAttempt(ctx, log, in, attempt, e, logSpaceRetryDelay)
	}
	if o.Err != nil && toolCtx.Err() == context.DeadlineExceeded {
		o.Err = &contract.StepError{Type: contract.ErrExecutionTimeout, Message: fmt.Sprintf("attempt %d ran past its timeout of %s and was killed", number, in.Timeout), Details: o.Err.Details}
	}
	d, err := DecideRetry(in.Retry, in.Handler, own, o, in.Scope, rand.Float64)
	if err != nil {
		o.Err = &contract.StepError{Type: contract.ErrExpression, Message: err.Error()}
		d = Decision{Recovery: contract.RecoveryError}
	}
	// ScheduledTime is when the first attempt of this activity was
	// scheduled; a local step's first local activity, Local.Since.
	since := info.ScheduledTime
	if in.Local != nil && !in.Local.Since.IsZero() {
		since = in.Local.Since
	}
	d = withinBudget(d, in.Retry.MaxDuration, time.Since(since), own)
	// A local step's delay too long to wait in the workflow task is the
	// run's to wait, on a timer, before its next local activity.
	retryAfter := time.Duration(0)
	if in.Local != nil {
		if d.Retry && d.Delay > spec.LocalRetryWithin {
			retryAfter = d.Delay
		}
	}
	if o.Err == nil && !d.Retry && d.Why == "" {
		out := &contract.StepOutput{Result: o.Result, Attempts: attempt, AttemptErrors: log.Failed, LogsAt: a.LogsAt, Files: o.Files}
		if in.Local != nil {
			keepLocalAttempts(in, log, false)
			out.ItemSHA256 = in.ItemSHA256
		}
		watch.ended(transitionCompleted, nil)
		return out, nil
	}
	stepErr := o.Err
	if stepErr == nil { // a success that retry_when keeps polling
		stepErr = &contract.StepError{Type: contract.ErrRetryWhen, Message: "retry_when is true", Details: map[string]any{"result": o.Result}}
	}
	final := contract.RedactError(*stepErr)
	if !d.Retry && d.Why != "" {
		final.Message += " (" + d.Why + ")"
	}
	log.Failed = append(log.Failed, contract.AttemptRecord{Attempt: number, Error: final, Recovery: d.Recovery, LogsAt: a.LogsAt})
	if in.Local != nil {
		keepLocalAttempts(in, log, d.Retry && retryAfter == 0)
	}
	if d.Retry && d.Rule != nil && d.Rule.RecoveryScript != "" && o.ExitCode != nil {
		code, stopped, stoodIn := 0, error(nil), false
		if a.Stand != nil && stood {
			code, stoodIn = a.Stand.Recovery(in, number, *o.ExitCode, d.Rule.RecoveryScript)
		}
		if !stoodIn {
			code, stopped = a.runRecovery(ctx, info, log, in, number, *o.ExitCode, d.Rule.RecoveryScript)
		}
		log.Failed[len(log.Failed)-1].RecoveryExitCode = &code
		if stopped != nil {
			// The server has ended the attempt (a cancel, or it gave up on a
			// worker cut off from it): as during the tool, not a failure.
			watch.ended(transitionCancelled, nil)
			return nil, temporal.NewCanceledError(fmt.Sprintf("step %s cancelled during its recovery script: %v", in.Step, stopped))
		}
	}
	activity.RecordHeartbeat(ctx, log)
	watch.ended(map[bool]string{true: transitionRetried, false: transitionFailed}[d.Retry], &final)
	return nil, temporal.NewApplicationErrorWithOptions(final.Message, final.Type, temporal.ApplicationErrorOptions{
		NonRetryable:   !d.Retry || retryAfter > 0,
		NextRetryDelay: d.Delay,
		Details:        []any{contract.FailureDetails{Error: final, Attempts: attempt, Recovery: d.Recovery, AttemptErrors: log.Failed, RetryAfter: retryAfter}},
	})
}

// previousAttempts reads the attempt log the attempts before this one left.
// An earlier attempt of this activity with no record of its end was lost
// with its worker (it may have died before its first heartbeat).
func previousAttempts(ctx context.Context, prior, number int) contract.AttemptLog {
	var log contract.AttemptLog
	if activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &log)
	}
	log.Failed = contract.WithLostAttempts(log.Failed, prior+1, number-1)
	// The attempt current at the last heartbeat, lost since, was served
	// where that heartbeat said: its record says so (playbook logs).
	for i := range log.Failed {
		if r := &log.Failed[i]; r.Lost && r.Attempt == log.Current && r.LogsAt == "" {
			r.LogsAt = log.LogsAt
		}
	}
	return log
}

// countLost counts the lost attempts numbered from first on.
func countLost(records []contract.AttemptRecord, first int) int {
	n := 0
	for _, r := range records {
		if r.Lost && r.Attempt >= first {
			n++
		}
	}
	return n
}

// lostTooOften is the step's failure when more attempts were lost than its
// lost_attempts allows: this attempt runs nothing and fails the step with
// the last lost attempt's error. It is not an attempt of the step: ran
// counts the ones before it.
func lostTooOften(log contract.AttemptLog, in contract.StepInput, lost, ran int) error {
	budget := in.Lost.Attempts
	var last contract.AttemptRecord
	for _, r := range log.Failed {
		if r.Lost {
			last = r
		}
	}
	final := last.Error
	if budget == 0 {
		final.Message += " (a lost attempt fails this step: lost_attempts is 0 or on_lost is fail)"
	} else {
		final.Message += fmt.Sprintf(" (%d attempts lost: lost_attempts allows %d)", lost, budget)
	}
	return temporal.NewApplicationErrorWithOptions(final.Message, final.Type, temporal.ApplicationErrorOptions{
		NonRetryable: true,
		Details:      []any{contract.FailureDetails{Error: final, Attempts: ran, Recovery: noRule(in), AttemptErrors: log.Failed}},
	})
}

// noRule is the recovery outcome of a failure no exit-code rule judged.
func noRule(in contract.StepInput) string {
	if in.Handler != nil {
		return contract.RecoveryNoMatchingRule
	}
	return contract.RecoveryNoHandler
}

// lostCause says whether an attempt whose context ended was lost with its
// worker, and as what. The SDK ends an attempt's context without a cancel
// request when its worker shuts down, or when a heartbeat to the server
// kept failing (the server was out of reach or slow): the attempt is lost.
// A cancel request, a pause or reset, an attempt the server no longer has,
// or the attempt's own deadline are not losses.
func lostCause(ctx context.Context) (typ string, lost bool) {
	if !errors.Is(ctx.Err(), context.Canceled) {
		return "", false
	}
	cause := context.Cause(ctx)
	switch {
	case serverStops(cause):
		return "", false
	case errors.Is(cause, sdkworker.ErrWorkerShutdown):
		return contract.ErrWorkerStopped, true
	}
	return contract.ErrHeartbeatTimeout, true
}

// errWorkerStopped is why an attempt's tool is cancelled when its worker
// has been stopping for longer than the drain timeout.
var errWorkerStopped = errors.New("the worker is stopping")

// drain cancels the tool, with errWorkerStopped, once the worker (whose
// stop channel is stop) has been asked to stop and the drain timeout has
// passed; done ends the watch, and once it has returned the tool is not
// cancelled by it. An attempt starts no goroutine of its own for it: it
// registers on its worker's stopping (workerStopping), and only a worker
// that stops starts its timer.
func (a *Activities) drain(stop <-chan struct{}, stopTool context.CancelCauseFunc) (done func()) {
	var mu sync.Mutex
	ended := false
	var cutOff *time.Timer
	unwatch := context.AfterFunc(workerStopping(stop), func() {
		mu.Lock()
		defer mu.Unlock()
		if ended {
			return
		}
		cutOff = time.AfterFunc(a.DrainTimeout, func() {
			mu.Lock()
			defer mu.Unlock()
			if !ended {
				stopTool(errWorkerStopped)
			}
		})
	})
	return func() {
		unwatch()
		mu.Lock()
		defer mu.Unlock()
		ended = true
		if cutOff != nil {
			cutOff.Stop()
		}
	}
}

// stopWatches holds, by a worker's stop channel, a context that ends when
// the channel closes: one goroutine for each worker watches the channel
// for all of the worker's attempts (drain).
var stopWatches sync.Map

// workerStopping is the context that ends when the worker whose stop
// channel is stop is asked to stop.
func workerStopping(stop <-chan struct{}) context.Context {
	if v, ok := stopWatches.Load(stop); ok {
		return v.(context.Context)
	}
	stopping, stopped := context.WithCancel(context.Background())
	if v, loaded := stopWatches.LoadOrStore(stop, stopping); loaded {
		stopped()
		return v.(context.Context)
	}
	go func() {
		<-stop
		stopped()
		// An attempt that asks after this watches the closed channel
		// again, which ends its context at once.
		stopWatches.Delete(stop)
	}()
	return stopping
}

// lostWithWorker reports an attempt its worker gave up (stopped past the
// drain timeout, or cut off from the server): a lost attempt, retried at
// once on another worker while the step's lost_attempts allows.
func (a *Activities) lostWithWorker(ctx context.Context, log contract.AttemptLog, in contract.StepInput, attempt int, typ, message string, o ToolResult) error {
	return a.lostAttempt(ctx, log, in, attempt, contract.StepError{Type: typ, Message: message, Details: outputTails(o)}, time.Millisecond)
}

// outputTails are the ends of the stdout and stderr of an attempt its
// worker gave up (its process stopped with it), which its record keeps as
// a failure's details do: the end of the output survives the worker. nil
// for a tool without a process, or one that did not run.
func outputTails(o ToolResult) map[string]any {
	if o.Err == nil {
		return nil
	}
	d, _ := o.Err.Details.(map[string]any)
	if d == nil {
		return nil
	}
	tails := map[string]any{}
	for _, k := range []string{"stdout", "stderr"} {
		if t, ok := d[k].(string); ok && t != "" {
			tails[k] = t
		}
	}
	if len(tails) == 0 {
		return nil
	}
	return tails
}

// logSpaceRetryDelay is how long after an attempt whose logs found the
// disk full the next one starts: time for the disk to get room, or for
// another worker to take it.
const logSpaceRetryDelay = 5 * time.Second

// lostAttempt reports an attempt that failed through no fault of the step
// (its worker gave it up, the worker's disk was full): recorded as lost,
// and retried after delay while the step's lost_attempts allows.
func (a *Activities) lostAttempt(ctx context.Context, log contract.AttemptLog, in contract.StepInput, attempt int, stepErr contract.StepError, delay time.Duration) error {
	rec := contract.AttemptRecord{Attempt: log.Current, Lost: true, Error: stepErr, LogsAt: a.LogsAt}
	log.Failed = append(log.Failed, rec)
	activity.RecordHeartbeat(ctx, log)
	lost := countLost(log.Failed, log.Current-attempt+1)
	if lost > in.Lost.Attempts {
		return lostTooOften(log, in, lost, attempt)
	}
	return temporal.NewApplicationErrorWithOptions(rec.Error.Message, rec.Error.Type, temporal.ApplicationErrorOptions{
		NextRetryDelay: delay,
		Details:        []any{contract.FailureDetails{Error: rec.Error, Attempts: attempt, AttemptErrors: log.Failed}},
	})
}

// runRecovery runs a rule's recovery script before a retry and returns its
// exit code; a failing script does not stop the retry. It sees the step's
// own env as well as the PLAYBOOK_* variables: it repairs what the step uses.
// The attempt heartbeats while the script runs, as it did while its tool
// ran, with log (this attempt's failure already in it): a script that runs
// longer than the heartbeat timeout does not lose the attempt, and a worker
// that dies during it leaves the failure on record. stopped says why the
// script was stopped when the server ended the attempt meanwhile (its
// answer to a heartbeat, or no heartbeat reaching it for the timeout).
func (a *Activities) runRecovery(ctx context.Context, info activity.Info, log contract.AttemptLog, in contract.StepInput, attempt, exitCode int, script string) (code int, stopped error) {
	// The script sees the step's secrets as the step did; they are read
	// again, and when one cannot be (gone since), the secrets' variables
	// are left out.
	resolved, secrets, secretErr := a.withSecrets(in.Spec, in.Secrets)
	if secretErr != nil {
		resolved = in.Spec
	}
	env, _ := resolved["env"].(map[string]any)
	env = maps.Clone(env)
	maps.DeleteFunc(env, func(name string, _ any) bool { _, named := in.Secrets["env."+name]; return named && secretErr != nil })
	ctx = withRedactor(ctx, secrets)
	stopCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	stopHeartbeat := heartbeat(ctx, a.Client, info, log, stop)
	run, err := a.runProcess(stopCtx, in, attempt, process{argv: []string{"/bin/sh", "-c", script}, name: "recovery", env: env},
		"PLAYBOOK_RETURN_CODE="+strconv.Itoa(exitCode))
	stopHeartbeat()
	if why := context.Cause(stopCtx); serverStops(why) || errors.Is(why, errCutOff) {
		stopped = why
	}
	if err != nil {
		return -1, stopped
	}
	return run.exitCode, stopped
}

// runTool runs one attempt of the step's tool with its kind's runner.
func (a *Activities) runTool(ctx context.Context, in contract.StepInput, attempt int) ToolResult {
	run, ok := runners[in.Kind]
	if !ok {
		return failure(contract.ErrTool, fmt.Sprintf("this worker has no tool kind %q", in.Kind), nil)
	}
	return run(a, ctx, in, attempt)
}

// runner runs one attempt of a tool kind.
type runner func(a *Activities, ctx context.Context, in contract.StepInput, attempt int) ToolResult

// runners are the tool kinds this worker runs, by kind: each kind's file
// adds its own with runs.
var runners = map[string]runner{}

// runs makes run the runner of its tool kind (the kind of S, a tool type of
// the core): each attempt decodes the step's rendered fields into S and
// calls run with them.
func runs[T any, S interface {
	*T
	spec.ToolSpec
}](run func(a *Activities, ctx context.Context, in contract.StepInput, toolSpec S, attempt int) ToolResult) bool {
	kind := S(new(T)).Kind()
	runners[kind] = func(a *Activities, ctx context.Context, in contract.StepInput, attempt int) ToolResult {
		toolSpec := S(new(T))
		if err := spec.DecodeTool(in.Spec, toolSpec); err != nil {
			return failure(contract.ErrTool, kind+" spec: "+err.Error(), nil)
		}
		return run(a, ctx, in, toolSpec, attempt)
	}
	return true
}

func failure(typ, msg string, details any) ToolResult {
	return ToolResult{Err: &contract.StepError{Type: typ, Message: msg, Details: details}}
}

// heartbeat records the attempt log as a heartbeat, every third of the
// attempt's heartbeat timeout and at least every second (beats), until
// stopped: heartbeats keep the attempt alive and bring back cancellation.
// The first goes out after firstBeat, so quick steps never pay for one (a
// heartbeat is a write on the server).
//
// It sends them through the worker's client (when it has one) rather than
// the SDK's activity heartbeat, because the SDK cancels an attempt as soon
// as one heartbeat fails for a second: a server restarting or slow to
// answer would cost a step an attempt. Here a failing heartbeat is sent
// again while the tool goes on, and the tool is stopped in two cases only:
//   - the server answers that the attempt is over for it (a cancel
//     request, a pause or reset, an attempt it no longer has): the answer
//     is passed to the SDK, which ends the attempt's context with it, and
//     is the tool's stop cause;
//   - no heartbeat has reached the server for the heartbeat timeout: by
//     then the server has given the attempt up and retries it elsewhere,
//     so the tool is stopped with errCutOff rather than run beside the
//     retry.
func heartbeat(ctx context.Context, c client.Client, info activity.Info, log contract.AttemptLog, stopTool context.CancelCauseFunc) (stop func()) {
	if info.IsLocalActivity {
		// A local activity cannot heartbeat: its workflow task keeps it.
		return func() {}
	}
	timeout := info.HeartbeatTimeout
	every := beatEvery(timeout)
	schedule := beatsFor(timeout)
	lastOK := time.Now()
	send := func() error {
		if c == nil {
			activity.RecordHeartbeat(ctx, log)
			return nil
		}
		wait := every
		if timeout > 0 {
			wait = max(time.Until(lastOK.Add(timeout)), every)
		}
		rctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		return c.RecordActivityHeartbeat(rctx, info.TaskToken, log)
	}
	// The first heartbeat is a timer, not a goroutine: an attempt that
	// ends before it (most do) starts none. When it fires, its goroutine
	// sends it and the ones after until stopped.
	done, exited := make(chan struct{}), make(chan struct{})
	beat := func() {
		defer close(exited)
		var next *time.Timer
		warned := false
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			default:
			}
			err := send()
			switch {
			case err == nil:
				lastOK = time.Now()
			case ctx.Err() != nil:
			case serverStops(err):
				activity.RecordHeartbeat(ctx, log)
				stopTool(err)
				return
			case timeout > 0 && time.Since(lastOK) >= timeout:
				stopTool(fmt.Errorf("%w for %s (%v)", errCutOff, timeout, err))
				return
			case !warned:
				warned = true
				activity.GetLogger(ctx).Warn("heartbeat failed; the step goes on and heartbeats again", "error", err)
			}
			if next == nil {
				next = time.NewTimer(schedule.next())
				defer next.Stop()
			} else {
				next.Reset(schedule.next())
			}
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-next.C:
			}
		}
	}
	first := time.AfterFunc(schedule.next(), beat)
	return func() {
		if first.Stop() {
			return // it never fired: no goroutine to wait for
		}
		close(done)
		<-exited
	}
}

// errCutOff is why a tool is stopped when no heartbeat has reached the
// server for the heartbeat timeout: the server has given the attempt up.
var errCutOff = errors.New("no heartbeat reached the server")

// serverStops says whether a heartbeat's error is the server's answer that
// the attempt is over for it: a cancel request, a pause or reset, or an
// attempt (or namespace) it no longer has.
func serverStops(err error) bool {
	var notFound *serviceerror.NotFound
	var nsNotFound *serviceerror.NamespaceNotFound
	var nsNotActive *serviceerror.NamespaceNotActive
	return temporal.IsCanceledError(err) || errors.Is(err, activity.ErrActivityPaused) ||
		errors.Is(err, activity.ErrActivityReset) || errors.As(err, &notFound) ||
		errors.As(err, &nsNotFound) || errors.As(err, &nsNotActive)
}

// resolveBase is the directory relative paths resolve against.
func resolveBase(baseDir string) string {
	if baseDir != "" {
		if st, err := os.Stat(baseDir); err == nil && st.IsDir() {
			return baseDir
		}
	}
	wd, _ := os.Getwd()
	return wd
}
