package playbookwf

import (
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
)

// SpanSink takes the spans a run's workflow emits: the worker's exporter
// when tracing is on (worker.Tracing). The workflow hands it spans only
// when it is not replaying, and every span's ID is derived from the run's
// identity (contract.RunTrace), so spans add no command to a history and
// a replay emits none again.
type SpanSink interface {
	// Emit exports spans, returning once they are sent or a short bound
	// has passed (the workflow task waits for it, so that a worker killed
	// right after the task completed has sent them).
	Emit(spans []contract.Span)
}

type sinkKey struct{}

// WithSpanSink is ctx with sink, which the worker's interceptor gives the
// workflows it runs when tracing is on.
func WithSpanSink(ctx workflow.Context, sink SpanSink) workflow.Context {
	return workflow.WithValue(ctx, sinkKey{}, sink)
}

// emitSpans hands the spans made by spans to the run's sink, when it has
// one and is not replaying; spans is not called otherwise.
func emitSpans(ctx workflow.Context, spans func() []contract.Span) {
	sink, _ := ctx.Value(sinkKey{}).(SpanSink)
	if sink == nil || workflow.IsReplaying(ctx) {
		return
	}
	if s := spans(); len(s) > 0 {
		sink.Emit(s)
	}
}

// tracing tells whether the workflow emits spans (a sink is set).
func tracing(ctx workflow.Context) bool {
	sink, _ := ctx.Value(sinkKey{}).(SpanSink)
	return sink != nil
}

// runSpan is what the run's span needs beyond the run's state, err why
// its workflow failed before `end` (nil when it did not).
func (x *executor) runSpan(err error) engine.RunSpan {
	rs := engine.RunSpan{
		Trace:     contract.RunTrace(x.info.WorkflowExecution.ID, x.info.WorkflowExecution.RunID),
		Start:     x.info.WorkflowStartTime,
		End:       workflow.Now(x.ctx),
		StartedBy: startedBy(x.info),
		Children:  x.children,
	}
	if err != nil {
		rs.Err = err.Error()
	}
	return rs
}

// emitEndedSteps emits the spans of the steps that ended for good since
// it was last called, as the workflow is about to wait: a long run shows
// its steps as they end. A replay makes them again without emitting them,
// so that the run's span does not repeat them.
func (x *executor) emitEndedSteps() {
	if !tracing(x.ctx) {
		return
	}
	spans := x.run.Ended(&x.spans, x.runSpan(nil))
	emitSpans(x.ctx, func() []contract.Span { return spans })
}

// emitRunSpans emits, as the run ends, its span and those of the steps
// not emitted yet (`end`'s, a step still waiting for a classification);
// agg is nil when the workflow failed (err) before `end`.
func (x *executor) emitRunSpans(agg *contract.Aggregate, err error) {
	emitSpans(x.ctx, func() []contract.Span { return x.run.Spans(&x.spans, x.runSpan(err), agg) })
}

// startedBy is the span of the step that started this run, for a
// sub-playbook's run: its workflow ID is its parent's and the step's
// name, joined by a dot (childID).
func startedBy(info *workflow.Info) *contract.SpanLink {
	p := info.ParentWorkflowExecution
	if p == nil {
		return nil
	}
	step, ok := strings.CutPrefix(info.WorkflowExecution.ID, p.ID+".")
	if !ok {
		return nil
	}
	t := contract.RunTrace(p.ID, p.RunID)
	return &contract.SpanLink{Trace: t, Span: contract.StepSpan(t, step)}
}

// elementSpans collects the spans of a loop's elements as they end, to be
// emitted as the loop waits for more of them to end (flush) and when it
// ends; a replay collects the same, with the same workflow times, and
// drops them, emitted before.
type elementSpans struct {
	on     bool
	starts map[int]time.Time
	spans  []contract.Span
}

func newElementSpans(ctx workflow.Context) *elementSpans {
	return &elementSpans{on: tracing(ctx), starts: map[int]time.Time{}}
}

// started notes when element index started.
func (e *elementSpans) started(ctx workflow.Context, index int) {
	if e.on && index < contract.LoopElementSpans {
		e.starts[index] = workflow.Now(ctx)
	}
}

// ended makes element index's span, once it ended with o.
func (e *elementSpans) ended(ctx workflow.Context, in contract.StepInput, index int, o contract.Outcome) {
	start, ok := e.starts[index]
	if !e.on || !ok {
		return
	}
	step, _ := contract.ElementOf(in.Step)
	if span, ok := engine.ElementSpan(contract.RunTrace(in.WorkflowID, in.RunID), step, index, start, workflow.Now(ctx), o); ok {
		e.spans = append(e.spans, span)
	}
}

// flush hands the spans collected to the sink (when not replaying) and
// forgets them.
func (e *elementSpans) flush(ctx workflow.Context) {
	if e.on && len(e.spans) > 0 {
		emitSpans(ctx, func() []contract.Span { return e.spans })
		e.spans = nil
	}
}

// noteChild notes the trace of the sub-playbook's run that step started,
// once it has ended (its execution is known then: the Get waits for
// nothing), when the run emits spans.
func (x *executor) noteChild(step string, f workflow.Future) {
	cf, ok := f.(workflow.ChildWorkflowFuture)
	if !ok || !tracing(x.ctx) {
		return
	}
	var we workflow.Execution
	if cf.GetChildWorkflowExecution().Get(x.ctx, &we) != nil {
		return
	}
	if x.children == nil {
		x.children = map[string]contract.TraceID{}
	}
	x.children[step] = contract.RunTrace(we.ID, we.RunID)
}
