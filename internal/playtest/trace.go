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
)

// tracer records the commands the run's workflows issue (activities,
// timers, children, version markers, side effects, search attributes),
// each with its workflow and a digest of its input: the determinism check
// runs a case twice and compares them.
type tracer struct {
	interceptor.WorkerInterceptorBase
	mu  sync.Mutex
	got []string
}

func (t *tracer) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.got)
}

func (t *tracer) record(ctx workflow.Context, format string, a ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.got = append(t.got, workflow.GetInfo(ctx).WorkflowExecution.ID+": "+fmt.Sprintf(format, a...))
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
	return o.Next.UpsertTypedSearchAttributes(ctx, attributes...)
}

// workerOptions are the test environment's: a loaded machine's first
// workflow task (the SDK and the expressions warming up) may take longer
// than the SDK's deadlock detector allows a real worker.
func workerOptions(t *tracer) worker.Options {
	return worker.Options{DeadlockDetectionTimeout: time.Minute, Interceptors: []interceptor.WorkerInterceptor{t}}
}

// diverged compares two runs' commands, each workflow's as a multiset (the
// order of parallel attempts' ends is the test environment's to choose),
// and says what the second issued that the first did not, or the reverse.
func diverged(first, second []string) string {
	a, b := slices.Sorted(slices.Values(first)), slices.Sorted(slices.Values(second))
	if slices.Equal(a, b) {
		return ""
	}
	count := map[string]int{}
	for _, l := range a {
		count[l]++
	}
	for _, l := range b {
		count[l]--
	}
	var only1, only2 []string
	for _, l := range slices.Sorted(func(yield func(string) bool) {
		for k := range count {
			if !yield(k) {
				return
			}
		}
	}) {
		switch n := count[l]; {
		case n > 0:
			only1 = append(only1, l)
		case n < 0:
			only2 = append(only2, l)
		}
	}
	var parts []string
	if len(only1) > 0 {
		parts = append(parts, "the first run only: "+strings.Join(only1, "; "))
	}
	if len(only2) > 0 {
		parts = append(parts, "the second run only: "+strings.Join(only2, "; "))
	}
	return strings.Join(parts, "; ")
}
