package worker

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"

	"playbook/interpreter/contract"
	"playbook/interpreter/playbookwf"
)

// Tracing exports runs' traces over OTLP: the spans the workflow emits
// (a run's, its steps', its loops' elements') and those the activities
// emit (each attempt's). It is made from the standard OTEL_* variables
// (TracingFromEnv); nil traces nothing.
type Tracing struct {
	exporter sdktrace.SpanExporter
	batch    sdktrace.SpanProcessor
	res      *resource.Resource
	// slowUntil (Unix nanoseconds) is until when Emit does not wait: a
	// flush that took emitBound found the collector slow or away, and a
	// workflow task that waited for it at each of its steps' ends would
	// pass the deadlock detector's second.
	slowUntil atomic.Int64
}

// emitBound is how long a workflow task waits for the spans it emitted to
// be sent: long enough for a collector nearby, short of the SDK's
// deadlock detector (one second). Spans not sent by then are sent later,
// in the background, and for slowPause no task waits.
const (
	emitBound = 300 * time.Millisecond
	slowPause = 10 * time.Second
)

// TracingFromEnv is the exporter the OTEL_* variables configure, or nil
// (and no exporter started) when they configure none: tracing is on when
// OTEL_TRACES_EXPORTER is otlp, or when it is unset and an OTLP endpoint
// is (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
// OTEL_SDK_DISABLED=true turns it off. OTEL_EXPORTER_OTLP_PROTOCOL (or
// _TRACES_PROTOCOL) is grpc or http/protobuf (the default); the
// exporters read their endpoint, headers, timeout, compression and
// certificates from the variables the OTLP specification names, the batch
// its OTEL_BSP_* settings, and the resource OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES.
func TracingFromEnv(ctx context.Context) (*Tracing, error) {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	switch exp := os.Getenv("OTEL_TRACES_EXPORTER"); exp {
	case "otlp":
	case "", "none":
		if exp == "none" || (os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "") {
			return nil, nil
		}
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: playbook exports traces over otlp only (or none)", exp)
	}
	protocolVar := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	protocol := os.Getenv(protocolVar)
	if protocol == "" {
		protocolVar = "OTEL_EXPORTER_OTLP_PROTOCOL"
		protocol = os.Getenv(protocolVar)
	}
	var exporter sdktrace.SpanExporter
	var err error
	switch protocol {
	case "grpc":
		exporter, err = otlptracegrpc.New(ctx)
	case "", "http/protobuf":
		exporter, err = otlptracehttp.New(ctx)
	default:
		return nil, fmt.Errorf("%s=%s: playbook exports traces over grpc or http/protobuf", protocolVar, protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("the OTLP trace exporter: %w", err)
	}
	res, err := resource.Merge(resource.NewSchemaless(attribute.String("service.name", "playbook")), resource.Environment())
	if err != nil {
		return nil, fmt.Errorf("the trace resource (OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	return &Tracing{exporter: exporter, batch: sdktrace.NewBatchSpanProcessor(exporter), res: res}, nil
}

// Emit sends the spans a workflow task emitted, waiting up to emitBound
// for them to be sent (playbookwf.SpanSink).
func (t *Tracing) Emit(spans []contract.Span) {
	for _, s := range spans {
		t.batch.OnEnd(t.snapshot(s))
	}
	if time.Now().UnixNano() < t.slowUntil.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), emitBound)
	defer cancel()
	if t.batch.ForceFlush(ctx) != nil {
		t.slowUntil.Store(time.Now().Add(slowPause).UnixNano())
	}
}

// Attempt queues an attempt's span (activities.AttemptSpans).
func (t *Tracing) Attempt(span contract.Span) { t.batch.OnEnd(t.snapshot(span)) }

// Shutdown sends what is queued and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.batch.Shutdown(ctx)
}

// snapshot is span as OpenTelemetry's SDK exports it.
func (t *Tracing) snapshot(s contract.Span) sdktrace.ReadOnlySpan {
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID(s.Trace), SpanID: trace.SpanID(s.ID), TraceFlags: trace.FlagsSampled})
	stub := tracetest.SpanStub{
		Name:                 s.Name,
		SpanContext:          sc,
		SpanKind:             trace.SpanKindInternal,
		StartTime:            s.Start,
		EndTime:              s.End,
		Attributes:           attributes(s.Attrs),
		Resource:             t.res,
		InstrumentationScope: instrumentation.Scope{Name: "playbook"},
	}
	if s.Parent != (contract.SpanID{}) {
		stub.Parent = trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID(s.Trace), SpanID: trace.SpanID(s.Parent), TraceFlags: trace.FlagsSampled})
	}
	for _, l := range s.Links {
		stub.Links = append(stub.Links, sdktrace.Link{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID(l.Trace), SpanID: trace.SpanID(l.Span), TraceFlags: trace.FlagsSampled})})
	}
	if s.Failed {
		stub.Status = sdktrace.Status{Code: codes.Error, Description: s.StatusMessage}
	} else {
		stub.Status = sdktrace.Status{Code: codes.Ok}
	}
	return stub.Snapshot()
}

// attributes are a span's attributes, sorted by name.
func attributes(m map[string]any) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(m))
	for k, v := range m {
		switch v := v.(type) {
		case string:
			out = append(out, attribute.String(k, v))
		case int:
			out = append(out, attribute.Int(k, v))
		case bool:
			out = append(out, attribute.Bool(k, v))
		case []string:
			out = append(out, attribute.StringSlice(k, v))
		default:
			out = append(out, attribute.String(k, fmt.Sprint(v)))
		}
	}
	set := attribute.NewSet(out...)
	return set.ToSlice()
}

// spanInterceptor gives every workflow the worker runs its span sink.
type spanInterceptor struct {
	interceptor.WorkerInterceptorBase
	sink playbookwf.SpanSink
}

func (i *spanInterceptor) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &spanInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, sink: i.sink}
}

type spanInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	sink playbookwf.SpanSink
}

func (w *spanInbound) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	return w.Next.ExecuteWorkflow(playbookwf.WithSpanSink(ctx, w.sink), in)
}
