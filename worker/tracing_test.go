package worker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"playbook/interpreter/contract"
)

// Tracing is off (no exporter made) unless the OTEL_* variables configure
// it; a protocol or exporter it does not speak is refused.
func TestTracingIsOffUnlessConfigured(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		on   bool
		err  string
	}{
		{"nothing set", nil, false, ""},
		{"an endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true, ""},
		{"a traces endpoint, grpc", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true, ""},
		{"exporter otlp", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{"exporter none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, false, ""},
		{"sdk disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, false, ""},
		{"another exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, "OTEL_TRACES_EXPORTER=zipkin: playbook exports traces over otlp only (or none)"},
		{"json", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, false, "OTEL_EXPORTER_OTLP_PROTOCOL=http/json: playbook exports traces over grpc or http/protobuf"},
		{"traces json", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, false, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json: playbook exports traces over grpc or http/protobuf"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
				t.Setenv(k, c.env[k])
			}
			tr, err := TracingFromEnv(context.Background())
			if c.err != "" {
				require.EqualError(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.on, tr != nil)
			require.NoError(t, tr.Shutdown(context.Background()))
			require.Equal(t, c.on, len(Options{Tracing: tr}.interceptors()) == 1, "the workflows get a span sink only when tracing is on")
		})
	}
}

// A span goes out with the IDs, times, parent, links, attributes and
// status the run gave it.
func TestSpanSnapshot(t *testing.T) {
	tr := &Tracing{}
	trace := contract.RunTrace("w", "r")
	other := contract.RunTrace("w.sub", "c")
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := tr.snapshot(contract.Span{Trace: trace, ID: contract.StepSpan(trace, "a"), Parent: contract.RootSpan(trace), Name: "step a", Start: at, End: at.Add(time.Second),
		Attrs: map[string]any{"playbook.attempts": 2, "playbook.kind": "shell", "playbook.routed_to_end": true}, Failed: true, StatusMessage: "exit_code: 3",
		Links: []contract.SpanLink{{Trace: other, Span: contract.RootSpan(other)}}})
	require.Equal(t, trace.String(), s.SpanContext().TraceID().String())
	require.Equal(t, contract.StepSpan(trace, "a").String(), s.SpanContext().SpanID().String())
	require.True(t, s.SpanContext().IsSampled())
	require.Equal(t, contract.RootSpan(trace).String(), s.Parent().SpanID().String())
	require.Equal(t, at, s.StartTime())
	require.Equal(t, at.Add(time.Second), s.EndTime())
	require.Equal(t, []attribute.KeyValue{attribute.Int("playbook.attempts", 2), attribute.String("playbook.kind", "shell"), attribute.Bool("playbook.routed_to_end", true)}, s.Attributes())
	require.Equal(t, codes.Error, s.Status().Code)
	require.Equal(t, "exit_code: 3", s.Status().Description)
	require.Len(t, s.Links(), 1)
	require.Equal(t, other.String(), s.Links()[0].SpanContext.TraceID().String())
	root := tr.snapshot(contract.Span{Trace: trace, ID: contract.RootSpan(trace), Name: "playbook p"})
	require.False(t, root.Parent().IsValid(), "the run's span is the trace's root")
	require.Equal(t, codes.Ok, root.Status().Code)
}

// flushCounter is a span processor whose flushes wait for their deadline,
// as a batch does whose collector does not answer.
type flushCounter struct {
	sdktrace.SpanProcessor
	flushes int
}

func (f *flushCounter) OnEnd(sdktrace.ReadOnlySpan) {}

func (f *flushCounter) ForceFlush(ctx context.Context) error {
	f.flushes++
	<-ctx.Done()
	return ctx.Err()
}

// A collector that does not answer holds a workflow task up once, not at
// each step's end: after a flush that took emitBound, the spans emitted
// go out in the background, without waiting.
func TestEmitWaitsNotForASlowCollector(t *testing.T) {
	fc := &flushCounter{}
	tr := &Tracing{batch: fc}
	trace := contract.RunTrace("w", "r")
	span := contract.Span{Trace: trace, ID: contract.StepSpan(trace, "a"), Name: "step a"}
	tr.Emit([]contract.Span{span})
	require.Equal(t, 1, fc.flushes)
	tr.Emit([]contract.Span{span})
	tr.Emit([]contract.Span{span})
	require.Equal(t, 1, fc.flushes, "no wait while the collector is slow")
	tr.slowUntil.Store(time.Now().Add(-time.Second).UnixNano())
	tr.Emit([]contract.Span{span})
	require.Equal(t, 2, fc.flushes, "a wait again after slowPause")
}
