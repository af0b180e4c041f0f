package playtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"playbook/interpreter/engine"
	"playbook/interpreter/playbookwf"
)

// tracer records the commands the run's workflows issue (activities,
// timers, children, version markers, side effects, search attributes),
// each with its workflow and a digest of its input, and the results and
// events they are given, in order: the determinism check runs a case
// twice and compares them.
type tracer struct {
	interceptor.WorkerInterceptorBase
	mu  sync.Mutex
	got []string
	// indexed, when set, is told each time a workflow updates its search
	// attributes: a step started waiting for a person or an event, say,
	// which nothing else the test environment hears of would show.
	indexed func()
}

func (t *tracer) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.got)
}

func (t *tracer) record(ctx workflow.Context, format string, a ...any) {
	t.note(workflow.GetInfo(ctx).WorkflowExecution.ID, format, a...)
}

// note adds a line to a workflow's trace: a command it issued, or (from
// the test environment's main loop) a result it was given.
func (t *tracer) note(workflowID, format string, a ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.got = append(t.got, workflowID+": "+fmt.Sprintf(format, a...))
}

// InterceptWorkflow implements interceptor.WorkerInterceptor.
func (t *tracer) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &traceIn{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, t: t}
}

type traceIn struct {
	interceptor.WorkflowInboundInterceptorBase
	t *tracer
}

func (i *traceIn) Init(out interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&traceOut{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: out}, t: i.t})
}

type traceOut struct {
	interceptor.WorkflowOutboundInterceptorBase
	t *tracer
}

func digest(args ...any) string {
	b, _ := json.Marshal(args)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

func (o *traceOut) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	o.t.record(ctx, "activity %s %s input %s", workflow.GetActivityOptions(ctx).ActivityID, activityType, digest(args...))
	return o.Next.ExecuteActivity(ctx, activityType, args...)
}

func (o *traceOut) ExecuteLocalActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	o.t.record(ctx, "local activity %s input %s", activityType, digest(args...))
	return o.Next.ExecuteLocalActivity(ctx, activityType, args...)
}

func (o *traceOut) ExecuteChildWorkflow(ctx workflow.Context, childWorkflowType string, args ...any) workflow.ChildWorkflowFuture {
	o.t.record(ctx, "child %s %s input %s", workflow.GetChildWorkflowOptions(ctx).WorkflowID, childWorkflowType, digest(args...))
	return o.Next.ExecuteChildWorkflow(ctx, childWorkflowType, args...)
}

func (o *traceOut) NewTimer(ctx workflow.Context, d time.Duration) workflow.Future {
	o.t.record(ctx, "timer %s", d)
	return o.Next.NewTimer(ctx, d)
}

func (o *traceOut) NewTimerWithOptions(ctx workflow.Context, d time.Duration, options workflow.TimerOptions) workflow.Future {
	if options.Summary == "Sleep" || strings.HasPrefix(options.Summary, playbookwf.LocalRetryTimer) {
		// A local step's retry delay: the attempt decided it (jitter
		// included), and its marker records it (playbookwf.LocalRetryTimer).
		o.t.record(ctx, "local retry timer")
		return o.Next.NewTimerWithOptions(ctx, d, options)
	}
	o.t.record(ctx, "timer %s", d)
	return o.Next.NewTimerWithOptions(ctx, d, options)
}

func (o *traceOut) GetVersion(ctx workflow.Context, changeID string, minSupported, maxSupported workflow.Version) workflow.Version {
	v := o.Next.GetVersion(ctx, changeID, minSupported, maxSupported)
	o.t.record(ctx, "version %s %d", changeID, v)
	return v
}

func (o *traceOut) UpsertTypedSearchAttributes(ctx workflow.Context, attributes ...temporal.SearchAttributeUpdate) error {
	o.t.record(ctx, "search attributes %d", len(attributes))
	err := o.Next.UpsertTypedSearchAttributes(ctx, attributes...)
	if o.t.indexed != nil {
		o.t.indexed()
	}
	return err
}

// workerOptions are the test environment's: a loaded machine's first
// workflow task (the SDK and the expressions warming up) may take longer
// than the SDK's deadlock detector allows a real worker.
func workerOptions(t *tracer) worker.Options {
	return worker.Options{DeadlockDetectionTimeout: time.Minute, Interceptors: []interceptor.WorkerInterceptor{t}}
}

// diverged compares two runs' traces workflow by workflow, in order: the
// commands each workflow issued and the results it was given between
// them. The second run is given the first run's results in the first
// run's order (deliveries), so a workflow that decides the same way
// issues the same commands in the same order, as a replay of its history
// requires; it names the first place where a workflow's differ.
func diverged(first, second []string) string {
	a, b := byWorkflow(first), byWorkflow(second)
	var ids []string
	for _, l := range append(slices.Clone(first), second...) {
		id, _, _ := strings.Cut(l, ": ")
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		x, y := a[id], b[id]
		for i := range max(len(x), len(y)) {
			if i < len(x) && i < len(y) && x[i] == y[i] {
				continue
			}
			return fmt.Sprintf("workflow %s, at its %s command or result: the first run %s, the second %s", id, engine.Ordinal(i+1), issued(x, i), issued(y, i))
		}
	}
	return ""
}

func byWorkflow(lines []string) map[string][]string {
	out := map[string][]string{}
	for _, l := range lines {
		id, what, _ := strings.Cut(l, ": ")
		out[id] = append(out[id], what)
	}
	return out
}

func issued(lines []string, i int) string {
	if i >= len(lines) {
		return "had nothing more"
	}
	if what, ok := strings.CutPrefix(lines[i], "given "); ok {
		return "was given " + what
	}
	return "issued " + lines[i]
}
